"""The lock that serialises writers of one model directory (``remem model pull``) across processes:
an exclusive OS file lock on its ``.lock`` file (``remem.portable.lock_file``). A directory left holding
nothing but its lock (a pull that failed before a byte arrived) is removed with the lock when the
block ends; a process that waited on that lock file then finds it gone from its path and locks the
new one (``_open_locked``). Where an open file cannot be removed (Windows), the directory stays."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from remem.errors import DownloadError
from remem.portable import lock_file, unlock_file

LOCK_FILE = ".lock"


@contextlib.contextmanager
def directory_lock(directory: Path) -> Iterator[None]:
    """Hold an exclusive OS file lock on directory/.lock for the duration; block until no one else holds it.

    Creates the directory (mode 0700) and the lock file if missing. The lock belongs to the open
    file, so it is released when the block ends or the process dies. When the block ends with
    nothing in the directory but the lock (and empty ``.part`` files), the directory goes, and its
    parent if that is empty then. Raises DownloadError if the directory or lock file cannot be
    created or locked.
    """
    fd = _open_locked(directory / LOCK_FILE)
    try:
        yield
    finally:
        _remove_if_unused(directory)  # still under the lock
        unlock_file(fd)
        os.close(fd)


def _open_locked(lock_path: Path) -> int:
    """A descriptor holding the lock of the file at ``lock_path`` (locked again when the file it
    locked was removed meanwhile by a holder that left the directory unused)."""
    while True:
        try:
            lock_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited (PEP 446)
        except OSError as exc:
            raise DownloadError(f"cannot create the lock file {lock_path}: {exc.strerror or exc}") from exc
        try:
            lock_file(fd)
            if _same_file(fd, lock_path):
                return fd
        except OSError as exc:
            os.close(fd)
            raise DownloadError(f"cannot lock {lock_path}: {exc.strerror or exc}") from exc
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    """True when ``path`` still names the file open as ``fd``."""
    try:
        here, there = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _remove_if_unused(directory: Path) -> None:
    """Remove ``directory`` (and its parent, when empty then) if it holds only the lock file and
    empty ``.part`` files; a directory that cannot be read or removed is left as it is."""
    try:
        entries = list(directory.iterdir())
        if any(
            p.name != LOCK_FILE and not (p.name.endswith(".part") and p.stat().st_size == 0) for p in entries
        ):
            return
        for entry in entries:
            entry.unlink()
        directory.rmdir()
        directory.parent.rmdir()
    except OSError:
        pass
