"""Connecting to a store's database: one SQLite connection per thread.

Threads sharing one store never share a connection, so never a transaction: each is as separate
from the others as another process would be, and the store's OS lock, generations and snapshots keep
them consistent exactly as they keep processes consistent. After ``Connections.close`` every use,
on any thread, raises StoreClosedError. (The retired bench/shared_memories.py, fake embedder,
2,000 memories, 2-core AMD EPYC at load 16: 4 threads sharing one Memories ran 36 rounds of add and
hybrid search a second, none failing.)
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

from remem.backends.local import fts
from remem.backends.local.guard import damage, store_error
from remem.backends.local.migrations import migrate
from remem.errors import StoreClosedError, StoreCorruptError, StoreError

BUSY_TIMEOUT_MS = 30_000

#: Reads map the first this many bytes of the database file instead of copying each page through
#: SQLite's own cache (2 MB by default): a search reads pages all over the vectors and memories
#: tables (checking which of the best vectors a filter selects), and mapped, one hybrid search at
#: 10k memories took 10.6 ms of ranking instead of 12.0 (bench/search.py's store, 100 queries). The
#: pages are the OS's page cache, shared by every process, but a process's RSS counts those it has
#: read (``RssFile``): mapping a whole 2.7 GB store made a full export show 2 GB where reading it
#: showed 255 MB. So the map stops at 256 MB: nearly all of a 100k-memory store (269 MB here).
MMAP_BYTES = 256 << 20


def connect(path: Path, *, migrated: bool = False) -> sqlite3.Connection:
    """Open (creating if needed) a store database in WAL mode and bring its schema up to date
    (unless ``migrated``: another connection did); on read-only media (the file or its directory
    not writable) open it read-only, so it can be read.

    Raises StoreCorruptError naming the file when it is not a usable SQLite database, StoreError
    when it is locked, read-only where a write was needed, or on a full disk.
    """
    writable = os.access(path.parent, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))
    try:
        conn = _connection(path) if writable else _read_only_connection(path)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}") from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS:d}")
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES:d}")
        if writable:
            if not migrated:  # WAL is kept in the file: set once
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        if not migrated:
            migrate(conn)
        conn.execute("PRAGMA foreign_keys = ON")
        if not migrated:
            fts.ensure_current(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        error = store_error(exc, path.parent)
        if isinstance(error, StoreCorruptError):
            error = StoreCorruptError(f"{path} is not a usable remem database: {damage(exc)}")
        raise error from exc
    return conn


def _connection(path: Path, uri: str | None = None) -> sqlite3.Connection:
    # Each thread uses its own (see ``Connections``), but a generator begun on one may be read on another.
    return sqlite3.connect(
        uri or path,
        isolation_level=None,
        timeout=BUSY_TIMEOUT_MS / 1000,
        check_same_thread=False,
        uri=uri is not None,
    )


def _read_only_connection(path: Path) -> sqlite3.Connection:
    """A read-only connection; where WAL cannot make its shared-memory file beside the database (a
    read-only mount, a snapshot), an immutable one: nothing can change the file there anyway."""
    conn = _connection(path, f"{path.resolve().as_uri()}?mode=ro")
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        conn.close()
        return _connection(path, f"{path.resolve().as_uri()}?immutable=1")
    return conn


class Connections:
    """The connections of the threads that use one store database (see the module docstring).

    A connection is only ever closed by its own thread (closing one another thread is using is not
    safe): ``close`` closes the caller's, and every other thread closes its own on its next use,
    which raises StoreClosedError; a thread that ends drops its own.
    """

    def __init__(self, first: sqlite3.Connection, path: Path | None, location: str) -> None:
        """Start with ``first`` (this thread's, from ``connect``); other threads open their own to
        ``path`` on first use (None: they share ``first``, for a single-threaded caller).
        ``location`` names the store in StoreClosedError."""
        self._path = path
        self._location = location
        self._local = threading.local()
        self._local.conn = first
        self._shared = first if path is None else None
        self._closed = False

    def current(self) -> sqlite3.Connection:
        """This thread's connection (opened on its first use); StoreClosedError once closed."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if self._closed:
            self._close_own()
            raise StoreClosedError(self._location)
        if conn is None:
            conn = self._shared if self._path is None else connect(self._path, migrated=True)
            assert conn is not None  # shared when there is no path
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection; every other thread's closes on its next use."""
        self._closed = True
        self._close_own()
        if self._shared is not None:
            self._shared.close()

    def _close_own(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()
