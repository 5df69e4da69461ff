"""The local store's staging area for big ingests (``remem.core.staged``): a second SQLite file,
``ingest.sqlite3``, beside the database, made when a big ingest begins and removed once no run is
left in it.

A file of its own, not tables of the store's database: a million-memory import stages 2.4 GB (its
vectors), which would stay behind in the database as free pages after the move (SQLite does not
shrink a file without VACUUM). Runs are made, and the file removed, under the writers' lock, so an
ingest never stages into a file another process is removing.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from remem.backends.local import stored_heads
from remem.backends.local.connections import BUSY_TIMEOUT_MS, MMAP_BYTES
from remem.backends.local.files import STAGING_FILE
from remem.backends.local.guard import translating
from remem.backends.local.transactions import atomic
from remem.backends.staging import (
    EXPIRE_AFTER,
    MOVE_PAGE,
    ROW_COLUMNS,
    Moved,
    MoveDigest,
    StagedRow,
    StagedRun,
    memory_of,
    model_json,
    page_windows,
    row_of,
    row_values,
    run_gone,
    run_of,
    since,
)
from remem.errors import StoreError
from remem.types import ModelInfo, utc_now_iso

if TYPE_CHECKING:
    from datetime import timedelta
    from pathlib import Path

    from remem.backends.local.home import Home
    from remem.backends.local.records import Records
    from remem.backends.local.writelog import WriteLog

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT NOT NULL UNIQUE,
        model TEXT,
        started_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS rows (
        run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        entry BLOB NOT NULL,
        dedup BLOB NOT NULL,
        thread TEXT,
        memory TEXT NOT NULL,
        duplicate INTEGER NOT NULL,
        vector BLOB,
        doc BLOB,
        context TEXT NOT NULL DEFAULT '',
        carried INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (run, seq)
    )""",
    "CREATE INDEX IF NOT EXISTS rows_dedup ON rows (run, dedup, seq)",
    "CREATE INDEX IF NOT EXISTS rows_thread ON rows (run, thread, seq) WHERE thread IS NOT NULL",
)
_RUN = (
    "SELECT id, key, model, (SELECT count(*) FROM rows WHERE rows.run = runs.id), started_at, updated_at "
    "FROM runs"
)
_ROW = f"SELECT {', '.join(ROW_COLUMNS)} FROM rows"


#: The store's ``writing(model)``: the move's transaction (the index checkpoint is written after it
#: when the move put it past its bound).
MoveWriting = Callable[[ModelInfo], contextlib.AbstractContextManager[tuple["WriteLog", "Records"]]]


@translating
class LocalStaging:
    """The staging file of one local store (``Staging``; see the module docstring). Its connection
    is opened when first needed and closed by ``close``."""

    def __init__(self, home: Home, location: str, writing: MoveWriting) -> None:
        """Stage for the store at ``home``; ``writing`` is the store's, for the move."""
        self.home, self.location, self.directory = home, location, home.directory
        self._move_writing = writing
        self.path: Path = home.directory / STAGING_FILE
        self._conn: sqlite3.Connection | None = None

    @property
    def conn(self) -> sqlite3.Connection:
        """The staging file's connection (the file is made, 0600, when there is none; on read-only
        media it is only read: ``doctor`` reports what an ingest staged there)."""
        if self._conn is None and not os.access(self.home.directory, os.W_OK):
            self._conn = _read_only(self.path)
        if self._conn is None:
            with contextlib.suppress(FileExistsError):
                os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS:d}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            for statement in _SCHEMA:
                conn.execute(statement)
            self._conn = conn
        return self._conn

    def close(self) -> None:
        """Close the staging file (opened again when next needed)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    @contextlib.contextmanager
    def _writing(self, run: StagedRun) -> Iterator[sqlite3.Connection]:
        """A transaction on the staging file that notes the run as written now; StoreError when
        the run is gone."""
        with atomic(self.conn) as conn:
            if not conn.execute(
                "UPDATE runs SET updated_at = ? WHERE id = ?", (utc_now_iso(), run.id)
            ).rowcount:
                raise run_gone(self.location)
            yield conn

    def begin(self, key: str) -> tuple[StagedRun, int]:
        """The run of ``key``, made if there is none; runs untouched for ``EXPIRE_AFTER`` are dropped."""
        with self.home.write_lock():
            expired = [run for run in self.runs() if since(run.updated_at) > EXPIRE_AFTER]
            with atomic(self.conn) as conn:
                for run in expired:
                    conn.execute("DELETE FROM runs WHERE id = ?", (run.id,))
                now = utc_now_iso()
                conn.execute(
                    "INSERT INTO runs (key, started_at, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (key) DO NOTHING",
                    (key, now, now),
                )
                found = run_of(conn.execute(f"{_RUN} WHERE key = ?", (key,)).fetchone())
        return found, len(expired)

    def use_model(self, run: StagedRun, model: ModelInfo) -> StagedRun:
        """The run with its vectors of ``model``: those of another model are dropped first."""
        if run.model == model:
            return run
        with self._writing(run) as conn:
            conn.execute("UPDATE rows SET vector = NULL, doc = NULL, carried = 0 WHERE run = ?", (run.id,))
            conn.execute("UPDATE runs SET model = ? WHERE id = ?", (model_json(model), run.id))
        return StagedRun(run.id, run.key, model, run.rows, run.started_at, run.updated_at)

    def staged(self, run: StagedRun, first: int, count: int) -> dict[int, tuple[bytes, bytes | None]]:
        """seq → (entry hash, document hash of its vectors or None) of the staged rows in range."""
        rows = self.conn.execute(
            "SELECT seq, entry, CASE WHEN vector IS NULL THEN NULL ELSE ifnull(doc, x'') END FROM rows "
            "WHERE run = ? AND seq >= ? AND seq < ?",
            (run.id, first, first + count),
        )
        return {int(seq): (bytes(entry), None if doc is None else bytes(doc)) for seq, entry, doc in rows}

    def earlier(self, run: StagedRun, keys: Sequence[bytes], before: int) -> set[bytes]:
        """Those of ``keys`` that a row before ``before`` has."""
        found: set[bytes] = set()
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            marks = ",".join("?" * len(chunk))
            # by key: SQLite would otherwise walk every earlier row of the run (quadratic: 8.9 s of a
            # 100k import under the profiler went there, 0.3 s by key)
            sql = (
                "SELECT DISTINCT dedup FROM rows INDEXED BY rows_dedup "
                f"WHERE run = ? AND dedup IN ({marks}) AND seq < ?"
            )
            found.update(bytes(row[0]) for row in self.conn.execute(sql, [run.id, *chunk, before]))
        return found

    def put(self, run: StagedRun, rows: Sequence[StagedRow], flags: Sequence[tuple[int, bool]]) -> None:
        """Stage ``rows`` (replacing those of the same seq) and set the duplicate flags, at once."""
        marks = ", ".join("?" * (len(ROW_COLUMNS) + 1))
        with self._writing(run) as conn:
            conn.executemany(
                f"INSERT OR REPLACE INTO rows (run, {', '.join(ROW_COLUMNS)}) VALUES ({marks})",
                [(run.id, *row_values(row)) for row in rows],
            )
            conn.executemany(
                "UPDATE rows SET duplicate = ? WHERE run = ? AND seq = ?", [(d, run.id, s) for s, d in flags]
            )

    def end_input(self, run: StagedRun, count: int) -> None:
        """Drop the rows from ``count`` on (staged from a longer input)."""
        with self._writing(run) as conn:
            conn.execute("DELETE FROM rows WHERE run = ? AND seq >= ?", (run.id, count))

    def conversation_rows(self, run: StagedRun, after: tuple[str, int] | None, limit: int) -> list[StagedRow]:
        """Up to ``limit`` new turns by (thread, seq) after ``after``, without their vectors."""
        thread, seq = after or ("", -1)
        rows = self.conn.execute(
            "SELECT seq, entry, dedup, thread, memory, duplicate, NULL, "
            "CASE WHEN vector IS NULL THEN NULL ELSE doc END, context, carried FROM rows "
            "WHERE run = ? AND thread IS NOT NULL AND NOT duplicate AND (thread, seq) > (?, ?) "
            "ORDER BY thread, seq LIMIT ?",
            (run.id, thread, seq, limit),
        )
        return [row_of(row) for row in rows]

    def set_vectors(
        self, run: StagedRun, items: Sequence[tuple[int, str, bytes | None, bytes | None]]
    ) -> None:
        """Give rows (seq, context, document hash, vectors) their context and, unless None, vectors."""
        with self._writing(run) as conn:
            conn.executemany(
                "UPDATE rows SET context = ?, doc = ifnull(?, doc), vector = ifnull(?, vector) "
                "WHERE run = ? AND seq = ?",
                [(context, doc, vector, run.id, seq) for seq, context, doc, vector in items],
            )

    def duplicate_rows(self, run: StagedRun, after: int, limit: int) -> list[StagedRow]:
        """Up to ``limit`` duplicate rows after seq ``after``, in input order, without vectors."""
        sql = f"{_ROW} WHERE run = ? AND duplicate AND seq > ? ORDER BY seq LIMIT ?"
        return [row_of(row) for row in self.conn.execute(sql, (run.id, after, limit))]

    def move(self, run: StagedRun, model: ModelInfo, digest: bytes) -> Moved:
        """Add the run's new memories in one transaction of the store (``Staging.move``), the
        store's database read without its memory map meanwhile (``_unmapped``); then, when they
        were ``stored_heads.REFRESH_AFTER`` or more and put the stored keyword heads behind, take those
        again (``stored_heads.refresh``: the first searches after a big import need not score every
        match; 12 s at a million memories, about 4 % of the import)."""
        moved, check = Moved(), MoveDigest()
        with _unmapped(self.home.records.conn), self._move_writing(model) as (_, records):
            created_at, after = utc_now_iso(), -1
            while page := self._fresh_rows(run, after):
                for row, windows in zip(page, page_windows(page, model.dim, self.location), strict=True):
                    check.add(row.seq, row.entry)
                    blobs = [window.tobytes() for window in windows]
                    result = records.add(memory_of(row.memory), blobs, created_at, row.context)
                    (moved.raced if result.duplicate else moved.added).append(result.id)
                    moved.carried += row.carried
                after = page[-1].seq
            check.check(digest, self.location)
        conn = self.home.records.conn
        if len(moved.added) >= stored_heads.REFRESH_AFTER and stored_heads.behind(conn):
            with contextlib.suppress(sqlite3.Error, StoreError):  # moved: they stay behind, serving less
                stored_heads.refresh(conn, self.home.write_lock)
        return moved

    def _fresh_rows(self, run: StagedRun, after: int) -> list[StagedRow]:
        sql = f"{_ROW} WHERE run = ? AND NOT duplicate AND seq > ? ORDER BY seq LIMIT ?"
        return [row_of(row) for row in self.conn.execute(sql, (run.id, after, MOVE_PAGE))]

    def discard(self, run: StagedRun) -> None:
        """Drop the run and its rows; the file goes when no run is left in it (the last run's rows
        are not deleted one by one: 400,000 took 4.2 s, removing the file no time)."""
        with self.home.write_lock():
            others = self.conn.execute("SELECT count(*) FROM runs WHERE id != ?", (run.id,)).fetchone()[0]
            if others:
                with atomic(self.conn) as conn:
                    conn.execute("DELETE FROM runs WHERE id = ?", (run.id,))
            self._remove_if_empty(others)

    def discard_idle(self, idle: timedelta) -> list[StagedRun]:
        """Drop every run not written for longer than ``idle``; the runs dropped."""
        if not self.path.exists():
            return []
        with self.home.write_lock():
            idle_runs = [run for run in self.runs() if since(run.updated_at) > idle]
            with atomic(self.conn) as conn:
                for run in idle_runs:
                    conn.execute("DELETE FROM runs WHERE id = ?", (run.id,))
            self._remove_if_empty(self.conn.execute("SELECT count(*) FROM runs").fetchone()[0])
        return idle_runs

    def _remove_if_empty(self, runs: int) -> None:
        """Remove the staging file (and its WAL files) when it holds no other ``runs``; the caller
        holds the writers' lock (no ingest makes a run meanwhile)."""
        if runs:
            return
        self.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")

    def runs(self) -> list[StagedRun]:
        """Every run staged (none when there is no staging file)."""
        if self._conn is None and not self.path.exists():
            return []
        return [run_of(row) for row in self.conn.execute(f"{_RUN} ORDER BY id")]


@contextlib.contextmanager
def _unmapped(conn: sqlite3.Connection) -> Iterator[None]:
    """``conn`` reads its database through SQLite's page cache, not the memory map, until the block
    ends. The move reads back what it adds and the exact index file is then written from every
    stored vector: through the map each page read stays in the process's resident memory (up to
    ``MMAP_BYTES``, 256 MB, reached by a 200,000-memory ingest), through the page cache it is
    bounded whatever the ingest's size (2 MB)."""
    conn.execute("PRAGMA mmap_size = 0")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES:d}")


def _read_only(path: Path) -> sqlite3.Connection:
    """The staging file opened read-only; immutable where SQLite cannot make its shared-memory
    file (a read-only mount), as the store's database is (``connections``)."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        conn.execute("SELECT count(*) FROM runs").fetchone()
    except sqlite3.OperationalError:
        conn.close()
        return sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True, isolation_level=None)
    return conn
