"""The local store's directory: creating it privately, its file names, and the writers' lock."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from remem.backends.local.connections import connect
from remem.errors import StoreCorruptError, StoreError, StoreNotFoundError
from remem.portable import NO_FOLLOW, PERMISSION_BITS, lock_file, unlock_file

DB_FILE = "memories.sqlite3"
INDEX_FILE = "vectors.faiss"
LOCK_FILE = "write.lock"
#: Held by the one process (or thread) rewriting the index checkpoint (``checkpoints.rewrite``), which
#: holds no writers' lock while it writes, only while it renames the new file into place.
REWRITE_LOCK = "checkpoint.lock"
#: Says that its directory is a remem store (written when a store is opened for writing).
MARKER_FILE = ".remem-store"
#: A big ingest's staging area (``staged``), while one is staged or interrupted.
STAGING_FILE = "ingest.sqlite3"
_MARKER_TEXT = "This directory is a remem store; remem manages the files it names (see the README).\n"
#: Every file remem keeps in a store directory (SQLite adds -wal, -shm and -journal to a database).
OWN_NAMES = frozenset(
    {
        *(
            f"{name}{suffix}"
            for name in (DB_FILE, STAGING_FILE)
            for suffix in ("", "-wal", "-shm", "-journal")
        ),
        INDEX_FILE,
        LOCK_FILE,
        REWRITE_LOCK,
        MARKER_FILE,
    }
)
#: remem's temporary files: ``.NAME.XXXXXXXX.tmp`` beside the file they replace (``remem.atomic``,
#: through ``tempfile.mkstemp``: random letters, digits or underscores).
_OWN_TEMP = re.compile(rf"\.(?:{'|'.join(map(re.escape, sorted(OWN_NAMES)))})\.\w+\.tmp", re.ASCII)


def prepare_directory(directory: Path, create: bool) -> Path:
    """The database path in ``directory``; with ``create`` the directory is made (0700) — the file
    itself is made by ``open_database``, under the writers' lock.

    StoreNotFoundError when it does not exist and ``create`` is false; StoreError when unusable,
    read-only, or a directory with other files in it that is not a store yet.
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
    except OSError as exc:
        raise StoreError(f"cannot use store directory {directory}: {exc.strerror or exc}") from exc
    if not os.access(directory, os.W_OK | os.X_OK):
        raise StoreError(f"the store at {directory} is read-only (its directory is not writable)")
    if not db_path.exists() and others_files(directory):
        raise StoreError(
            f"store (or $REMEM_HOME) must be an empty or new directory: {directory} holds other files "
            "and is not a remem store",
            mentions=("store",),
        )
    return db_path


def own_paths(directory: Path) -> list[Path]:
    """The files of ``directory`` that remem owns: its own names and its temporary files."""
    return sorted(
        path for path in directory.iterdir() if path.name in OWN_NAMES or _OWN_TEMP.fullmatch(path.name)
    )


def own_temp_files(directory: Path) -> list[Path]:
    """Temporary files remem's atomic writes in ``directory`` leave when interrupted (others' are
    not remem's to remove)."""
    return [path for path in own_paths(directory) if path.name.endswith(".tmp") and path.is_file()]


def others_files(directory: Path) -> list[Path]:
    """What ``directory`` holds that is not remem's."""
    owned = set(own_paths(directory))
    return sorted(path for path in directory.iterdir() if path not in owned)


def mark(directory: Path) -> None:
    """Write the marker that says ``directory`` is a remem store (once; a failure is harmless)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory / MARKER_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(_MARKER_TEXT)


def tighten(directory: Path) -> list[Path]:
    """Make remem's files in ``directory`` private (0600), and the directory (0700) when it holds
    nothing but them; returns what was changed. Nothing else is touched."""
    changed = []
    for path in loose_paths(directory):
        os.chmod(path, 0o700 if path.is_dir() else 0o600)
        changed.append(path)
    return changed


def loose_paths(directory: Path) -> list[Path]:
    """remem's files that group or others can access, and the directory when it is remem's alone
    (none where permission bits say nothing of who may read a file: Windows)."""
    if not PERMISSION_BITS:
        return []
    paths = [p for p in own_paths(directory) if p.is_file() and not p.is_symlink()]
    if not others_files(directory):
        paths.insert(0, directory)
    return [p for p in paths if p.stat().st_mode & 0o077]


def open_database(directory: Path, create: bool) -> sqlite3.Connection:
    """The store's database, connected and migrated (see ``prepare_directory``, ``connect``).

    A new database is made (0600, exclusively) and initialised under the writers' lock by one
    process while the others wait, so an empty file seen under the lock is never a new store: it is
    reported (StoreCorruptError), never silently replaced by an empty store.
    """
    db_path = prepare_directory(directory, create)
    if create:  # opened by a writer: mark it as a store, and make remem's files private
        mark(directory)
        with contextlib.suppress(OSError):
            tighten(directory)
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
    """Hold the store's exclusive writer lock, an OS file lock on its ``write.lock`` (BlockingIOError
    if not ``blocking`` and it is held); taking it removes temporary files a killed writer left
    behind (an index file's only while no one is rewriting it: see ``rewriting``)."""
    with _holding(directory, LOCK_FILE, blocking, "is locked by another writer"):
        with contextlib.suppress(BlockingIOError), _holding(directory, REWRITE_LOCK, False, ""):
            _remove_temp_files(directory, INDEX_FILE)  # no rewriter at work: a killed one's
        _remove_temp_files(directory, None)
        yield


@contextlib.contextmanager
def rewriting(directory: Path, *, blocking: bool = True) -> Iterator[None]:
    """Hold the lock of the one rewriter of the index checkpoint (BlockingIOError if not
    ``blocking`` and another holds it). It does not keep writers out, so it removes no temporary
    file (a writer's may be one): the next writer removes a killed rewriter's (``locked``)."""
    with _holding(directory, REWRITE_LOCK, blocking, "is having its index rewritten"):
        yield


def _remove_temp_files(directory: Path, of: str | None) -> None:
    """Remove remem's temporary files in ``directory`` that replace the file named ``of`` (None:
    every other file's)."""
    for leftover in own_temp_files(directory):
        if leftover.name.startswith(f".{INDEX_FILE}.") == (of == INDEX_FILE):
            with contextlib.suppress(OSError):
                leftover.unlink()


@contextlib.contextmanager
def _holding(directory: Path, name: str, blocking: bool, busy: str) -> Iterator[None]:
    """Hold an exclusive OS file lock on ``directory/name`` (BlockingIOError saying ``busy`` if not
    ``blocking`` and it is held)."""
    try:
        fd = os.open(directory / name, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise StoreError(f"the store at {directory} is read-only; it can be read, not changed") from exc
        raise StoreError(f"cannot lock {directory}: {exc.strerror or exc}") from exc
    try:
        if not lock_file(fd, blocking=blocking):
            raise BlockingIOError(errno.EAGAIN, f"{directory} {busy}")
        yield
    finally:
        unlock_file(fd)
        os.close(fd)
