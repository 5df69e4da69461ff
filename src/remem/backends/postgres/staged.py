"""A PostgreSQL store's staging area for big ingests (``remem.core.staged``): the tables
``ingest_runs`` and ``ingest_rows`` of the store's schema (migration 7), which no search, list or
export reads. Each write is a transaction of its own; the move is one transaction of the store,
under its lock (alone when it rebuilds the HNSW graph: ``bulk``), that reads the staged rows a
page at a time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from remem.backends.postgres import bulk, records
from remem.backends.postgres.rows import one_row, one_value
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
)
from remem.times import utc_iso
from remem.types import AddResult, ModelInfo, NewMemory, utc_now_iso

if TYPE_CHECKING:
    import psycopg

    from remem.backends.postgres.access import StoreAccess

#: The store's ``insert_many``: memories inserted inside the move's transaction, in order.
InsertMany = Callable[["psycopg.Cursor[Any]", Sequence[NewMemory], str, Sequence[str]], list[AddResult]]

_RUN = (
    "SELECT id, key, model, (SELECT count(*) FROM {s}.ingest_rows w WHERE w.run = r.id), started_at, "
    "updated_at FROM {s}.ingest_runs r"
)
_ROW = f"SELECT {', '.join(ROW_COLUMNS)} FROM {{s}}.ingest_rows"
#: The types of ``run`` and ``ROW_COLUMNS``, for a binary COPY.
_COPY_TYPES = ["int8", "int8", "bytea", "bytea", "text", "text", "bool", "bytea", "bytea", "text", "bool"]


class PostgresStaging:
    """The staging tables of one PostgreSQL store (``Staging``; see the module docstring)."""

    def __init__(
        self, access: StoreAccess, insert_many: InsertMany, after_adding: Callable[[int], None]
    ) -> None:
        """Stage for the store ``access`` reaches; ``insert_many`` and ``after_adding`` are the
        store's, for the move."""
        self.access, self.session, self.s, self.location = access, access.session, access.s, access.location
        self._insert_many, self._after_adding = insert_many, after_adding

    def close(self) -> None:
        """Nothing to release: the store's connections serve the staging too."""

    @contextlib.contextmanager
    def _writing(self, run: StagedRun) -> Iterator[psycopg.Cursor[Any]]:
        """A write transaction that notes the run as written now (StoreError when it is gone)."""
        with self.session.transaction(writes=True) as cursor:
            cursor.execute(
                f"UPDATE {self.s}.ingest_runs SET updated_at = %s WHERE id = %s", (utc_now_iso(), run.id)
            )
            if not cursor.rowcount:
                raise run_gone(self.location)
            yield cursor

    def begin(self, key: str) -> tuple[StagedRun, int]:
        """The run of ``key``, made if there is none; runs untouched for ``EXPIRE_AFTER`` are dropped."""
        with self.session.transaction(writes=True) as cursor:
            cursor.execute(
                f"DELETE FROM {self.s}.ingest_runs WHERE updated_at < %s",
                (_before(EXPIRE_AFTER),),
            )
            expired = cursor.rowcount
            now = utc_now_iso()
            cursor.execute(
                f"INSERT INTO {self.s}.ingest_runs (key, started_at, updated_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (key) DO NOTHING",
                (key, now, now),
            )
            cursor.execute(f"{_RUN.format(s=self.s)} WHERE key = %s", (key,))
            return run_of(one_row(cursor)), expired

    def use_model(self, run: StagedRun, model: ModelInfo) -> StagedRun:
        """The run with its vectors of ``model``: those of another model are dropped first."""
        if run.model == model:
            return run
        with self._writing(run) as cursor:
            cursor.execute(
                f"UPDATE {self.s}.ingest_rows SET vector = NULL, doc = NULL, carried = false WHERE run = %s",
                (run.id,),
            )
            cursor.execute(
                f"UPDATE {self.s}.ingest_runs SET model = %s WHERE id = %s", (model_json(model), run.id)
            )
        return StagedRun(run.id, run.key, model, run.rows, run.started_at, run.updated_at)

    def staged(self, run: StagedRun, first: int, count: int) -> dict[int, tuple[bytes, bytes | None]]:
        """seq → (entry hash, document hash of its vectors or None) of the staged rows in range."""
        with self.session.transaction() as cursor:
            cursor.execute(
                "SELECT seq, entry, CASE WHEN vector IS NULL THEN NULL ELSE coalesce(doc, '') END "
                f"FROM {self.s}.ingest_rows WHERE run = %s AND seq >= %s AND seq < %s",
                (run.id, first, first + count),
            )
            return {
                int(seq): (bytes(entry), None if doc is None else bytes(doc))
                for seq, entry, doc in cursor.fetchall()
            }

    def earlier(self, run: StagedRun, keys: Sequence[bytes], before: int) -> set[bytes]:
        """Those of ``keys`` that a row before ``before`` has."""
        with self.session.transaction() as cursor:
            cursor.execute(
                f"SELECT DISTINCT dedup FROM {self.s}.ingest_rows "
                "WHERE run = %s AND dedup = ANY(%s) AND seq < %s",
                (run.id, list(keys), before),
            )
            return {bytes(row[0]) for row in cursor.fetchall()}

    def put(self, run: StagedRun, rows: Sequence[StagedRow], flags: Sequence[tuple[int, bool]]) -> None:
        """Stage ``rows`` (replacing those of the same seq) and set the duplicate flags, at once:
        the rows with a binary COPY (a 100,000-entry import with vectors was staged in 11.9 s,
        18.7 s through INSERT … ON CONFLICT: 2 shared cores, load 4–5)."""
        with self._writing(run) as cursor:
            if rows:
                cursor.execute(
                    f"DELETE FROM {self.s}.ingest_rows WHERE run = %s AND seq = ANY(%s::bigint[])",
                    (run.id, [row.seq for row in rows]),
                )
                columns = ", ".join(ROW_COLUMNS)
                with cursor.copy(
                    f"COPY {self.s}.ingest_rows (run, {columns}) FROM STDIN WITH (FORMAT BINARY)"
                ) as copying:
                    copying.set_types(_COPY_TYPES)
                    for row in rows:
                        copying.write_row((run.id, *row_values(row)))
            if rows and _grew(rows[0].seq, rows[-1].seq):
                # fresh statistics, or the planner takes the table for small and ``earlier`` walks
                # every earlier row of the run (33 ms a batch at 150,000 rows, growing) instead of
                # looking its keys up (9 ms)
                cursor.execute(f"ANALYZE {self.s}.ingest_rows")
            if flags:
                cursor.execute(
                    f"UPDATE {self.s}.ingest_rows r SET duplicate = f.d FROM unnest(%s::bigint[], "
                    "%s::boolean[]) AS f(seq, d) WHERE r.run = %s AND r.seq = f.seq",
                    ([seq for seq, _ in flags], [flag for _, flag in flags], run.id),
                )

    def end_input(self, run: StagedRun, count: int) -> None:
        """Drop the rows from ``count`` on (staged from a longer input)."""
        with self._writing(run) as cursor:
            cursor.execute(f"DELETE FROM {self.s}.ingest_rows WHERE run = %s AND seq >= %s", (run.id, count))

    def conversation_rows(self, run: StagedRun, after: tuple[str, int] | None, limit: int) -> list[StagedRow]:
        """Up to ``limit`` new turns by (thread, seq) after ``after``, without their vectors."""
        thread, seq = after or ("", -1)
        with self.session.transaction() as cursor:
            cursor.execute(
                "SELECT seq, entry, dedup, thread, memory, duplicate, NULL, CASE WHEN vector IS NULL "
                f"THEN NULL ELSE doc END, context, carried FROM {self.s}.ingest_rows "
                "WHERE run = %s AND thread IS NOT NULL AND NOT duplicate AND (thread, seq) > (%s, %s) "
                "ORDER BY thread, seq LIMIT %s",
                (run.id, thread, seq, limit),
            )
            return [row_of(row) for row in cursor.fetchall()]

    def set_vectors(
        self, run: StagedRun, items: Sequence[tuple[int, str, bytes | None, bytes | None]]
    ) -> None:
        """Give rows (seq, context, document hash, vectors) their context and, unless None, vectors."""
        with self._writing(run) as cursor:
            cursor.executemany(
                f"UPDATE {self.s}.ingest_rows SET context = %s, doc = coalesce(%s, doc), "
                "vector = coalesce(%s, vector) WHERE run = %s AND seq = %s",
                [(context, doc, vector, run.id, seq) for seq, context, doc, vector in items],
            )

    def duplicate_rows(self, run: StagedRun, after: int, limit: int) -> list[StagedRow]:
        """Up to ``limit`` duplicate rows after seq ``after``, in input order."""
        with self.session.transaction() as cursor:
            cursor.execute(
                f"{_ROW.format(s=self.s)} WHERE run = %s AND duplicate AND seq > %s ORDER BY seq LIMIT %s",
                (run.id, after, limit),
            )
            return [row_of(row) for row in cursor.fetchall()]

    def move(self, run: StagedRun, model: ModelInfo, digest: bytes) -> Moved:
        """Add the run's new memories in one transaction of the store (``Staging.move``); an add
        big enough drops the HNSW graph and builds it once at the end (``bulk``)."""
        self.access.stamp(model)
        rebuild = bulk.worth_rebuilding(self.access, _fresh_count(self, run))
        moved, check = Moved(), MoveDigest()
        with self.access.writing(model, exclusive=rebuild) as cursor:
            definition = bulk.drop_graph(cursor, self.session.url.schema, self.s) if rebuild else None
            created_at, after = utc_now_iso(), -1
            while page := self._fresh_rows(cursor, run, after):
                results = self._add_page(cursor, page, model, created_at, check, rebuild)
                for row, result in zip(page, results, strict=True):
                    (moved.raced if result.duplicate else moved.added).append(result.id)
                    moved.carried += row.carried
                after = page[-1].seq
            check.check(digest, self.location)
            if definition is not None:
                bulk.build_graph(cursor, self.s, model.dim, definition)
        self._after_adding(len(moved.added))
        return moved

    def _fresh_rows(self, cursor: psycopg.Cursor[Any], run: StagedRun, after: int) -> list[StagedRow]:
        cursor.execute(
            f"{_ROW.format(s=self.s)} WHERE run = %s AND NOT duplicate AND seq > %s ORDER BY seq LIMIT %s",
            (run.id, after, MOVE_PAGE),
        )
        return [row_of(row) for row in cursor.fetchall()]

    def _add_page(
        self,
        cursor: psycopg.Cursor[Any],
        page: list[StagedRow],
        model: ModelInfo,
        created_at: str,
        check: MoveDigest,
        rebuild: bool,
    ) -> list[AddResult]:
        """Insert a page of staged rows with their vectors, inside the move's transaction."""
        windows = page_windows(page, model.dim, self.location)
        for row in page:
            check.add(row.seq, row.entry)
        results = self._insert_many(
            cursor, [memory_of(row.memory) for row in page], created_at, [row.context for row in page]
        )
        stored = [(r.id, rows) for r, rows in zip(results, windows, strict=True) if not r.duplicate]
        if rebuild:
            bulk.copy_vectors(cursor, self.s, stored)
        else:
            for memory_id, rows in stored:
                records.add_vectors(cursor, self.s, memory_id, rows)
        return results

    def discard(self, run: StagedRun) -> None:
        """Drop the run and its rows: the tables are emptied at once when it is the only run (new
        runs wait for that), its rows deleted otherwise."""
        with self.session.transaction(timeout_ms=0, writes=True) as cursor:
            cursor.execute(f"LOCK TABLE {self.s}.ingest_runs IN SHARE ROW EXCLUSIVE MODE")
            cursor.execute(f"SELECT count(*) FROM {self.s}.ingest_runs WHERE id != %s", (run.id,))
            if one_value(cursor):
                cursor.execute(f"DELETE FROM {self.s}.ingest_runs WHERE id = %s", (run.id,))
            else:
                cursor.execute(f"TRUNCATE {self.s}.ingest_rows, {self.s}.ingest_runs")

    def discard_idle(self, idle: timedelta) -> list[StagedRun]:
        """Drop every run not written for longer than ``idle``; the runs dropped."""
        with self.session.transaction(timeout_ms=0, writes=True) as cursor:
            idle_runs = [run for run in self._runs(cursor) if run.updated_at < _before(idle)]
            cursor.execute(
                f"DELETE FROM {self.s}.ingest_runs WHERE id = ANY(%s::bigint[])",
                ([run.id for run in idle_runs],),
            )
            return idle_runs

    def runs(self) -> list[StagedRun]:
        """Every run staged."""
        with self.session.transaction() as cursor:
            return self._runs(cursor)

    def _runs(self, cursor: psycopg.Cursor[Any]) -> list[StagedRun]:
        cursor.execute(f"{_RUN.format(s=self.s)} ORDER BY id")
        return [run_of(row) for row in cursor.fetchall()]


def _grew(first: int, last: int) -> bool:
    """Whether rows ``first`` … ``last`` take a run to a power of two of rows, from 8,192 on."""
    return last >= 8192 and last.bit_length() > max(first - 1, 0).bit_length()


def _fresh_count(staging: PostgresStaging, run: StagedRun) -> int:
    """How many rows of the run are not duplicates (for the choice to rebuild the graph)."""
    with staging.session.transaction() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {staging.s}.ingest_rows WHERE run = %s AND NOT duplicate", (run.id,)
        )
        return int(one_value(cursor))


def _before(age: timedelta) -> str:
    """The moment ``age`` ago, as runs record theirs."""
    return utc_iso(datetime.now(timezone.utc) - age)
