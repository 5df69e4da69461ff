"""The local store's directory: creating it privately, its file names, and the writers' lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from remem.errors import StoreError, StoreNotFoundError

DB_FILE = "memories.sqlite3"
INDEX_FILE = "vectors.faiss"
LOCK_FILE = "write.lock"


def prepare_directory(directory: Path, create: bool) -> Path:
    """The database path in ``directory``; with ``create`` the directory is made (0700) — the file
    itself is made by ``create_database_file``, under the writers' lock.

    StoreNotFoundError when it does not exist and ``create`` is false; StoreError when unusable.
    """
    if directory.exists() and not directory.is_dir():
        raise StoreError(f"store path {directory} exists and is not a directory")
    db_path = directory / DB_FILE
    if not create:
        if not db_path.is_file():
            raise StoreNotFoundError(f"no remem store at {directory}")
        return db_path
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not os.access(directory, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        raise StoreError(f"cannot use store directory {directory}: {exc.strerror or exc}") from exc
    return db_path


def create_database_file(db_path: Path) -> None:
    """Make the empty database file (0600), exclusively: the caller holds the writers' lock and
    initialises it before letting go, so an empty file seen under the lock is never a new store."""
    try:
        os.close(os.open(db_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as exc:
        raise StoreError(f"cannot create {db_path}: {exc.strerror or exc}") from exc


@contextlib.contextmanager
def locked(directory: Path, *, blocking: bool = True) -> Iterator[None]:
    """Hold the store's exclusive writer lock (BlockingIOError if not ``blocking`` and it is held);
    taking it removes temporary files a killed writer left behind."""
    try:
        fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StoreError(f"cannot lock {directory}: {exc.strerror or exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        for leftover in directory.glob(".*.tmp"):  # from a writer that was killed mid-save
            with contextlib.suppress(OSError):
                leftover.unlink()
        yield
    finally:
        os.close(fd)
