"""The lock that serialises writers of one model directory (``remem model pull``) across processes:
an exclusive flock on its ``.lock`` file."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from remem.errors import DownloadError

LOCK_FILE = ".lock"


@contextlib.contextmanager
def directory_lock(directory: Path) -> Iterator[None]:
    """Hold an exclusive flock on directory/.lock for the duration; block until no one else holds it.

    Creates the directory (mode 0700) and the lock file if missing. The lock belongs to the open
    file, so it is released when the block ends or the process dies. Raises DownloadError if the
    directory or lock file cannot be created or locked.
    """
    fd = _open_locked(directory / LOCK_FILE)
    try:
        yield
    finally:
        os.close(fd)


def _open_locked(lock_path: Path) -> int:
    try:
        lock_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise DownloadError(f"cannot create the lock file {lock_path}: {exc.strerror or exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        os.close(fd)
        raise DownloadError(f"cannot lock {lock_path}: {exc.strerror or exc}") from exc
    return fd
