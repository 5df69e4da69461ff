"""The local store's directory: creating it privately, its file names, and the writers' lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from remem.backends.local.records import connect
from remem.errors import StoreCorruptError, StoreError, StoreNotFoundError

DB_FILE = "memories.sqlite3"
INDEX_FILE = "vectors.faiss"
LOCK_FILE = "write.lock"


def prepare_directory(directory: Path, create: bool) -> Path:
    """The database path in ``directory``; with ``create`` the directory is made (0700) — the file
    itself is made by ``open_database``, under the writers' lock.

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


def open_database(directory: Path, create: bool) -> sqlite3.Connection:
    """The store's database, connected and migrated (see ``prepare_directory``, ``connect``).

    A new database is made (0600, exclusively) and initialised under the writers' lock by one
    process while the others wait, so an empty file seen under the lock is never a new store: it is
    reported (StoreCorruptError), never silently replaced by an empty store.
    """
    db_path = prepare_directory(directory, create)
    if db_path.is_file() and db_path.stat().st_size > 0:
        return connect(db_path)
    with locked(directory):
        if not db_path.exists():
            try:
                os.close(os.open(db_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
            except OSError as exc:
                raise StoreError(f"cannot create {db_path}: {exc.strerror or exc}") from exc
        elif db_path.stat().st_size == 0:
            raise StoreCorruptError(
                f"{db_path} is empty (0 bytes), not a remem database; restore it from a backup, "
                "or delete it to start a new store"
            )
        return connect(db_path)


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
