"""Atomic file replacement: readers see the old file or the new one, never a partial write."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from remem.portable import set_mode


@contextlib.contextmanager
def atomic_writer(
    path: Path, mode: int = 0o600, swap: Callable[[Path, Path], bool] | None = None
) -> Iterator[BinaryIO]:
    """Yield a binary file that replaces ``path`` (with permissions ``mode``) when the block ends.

    The temporary file beside it has an unpredictable name and is created exclusively (never
    through a planted file or symlink). The data is fsynced before the rename and the directory
    after it. If the block raises, the temporary file is removed and ``path`` is untouched.
    With ``swap``, ``swap(temporary, path)`` does the rename instead (under a lock of the caller's,
    say) and returns False when it decided not to: then the temporary file is removed.
    OSError propagates to the caller.
    """
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        set_mode(fd, mode)
    except BaseException:
        os.close(fd)
        tmp.unlink()
        raise
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if swap is None:
            os.replace(tmp, path)
        elif not swap(tmp, path):
            tmp.unlink()
            return
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Make a rename or new file in ``directory`` durable (best effort where directories can't be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
