"""SQLite records: the source of truth for memories, their tags, metadata and vectors."""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from remem.errors import StoreCorruptError, StoreError
from remem.index import fts
from remem.index.keywords import fts_query, term_queries
from remem.index.migrations import migrate

BUSY_TIMEOUT_MS = 30_000

_MEMORY_COLUMNS = """m.id, m.text, m.sha256, m.created_at, m.user, m.conversation, m.role, m.meta,
    (SELECT json_group_array(tag) FROM
        (SELECT tag FROM memory_tags t WHERE t.memory_id = m.id ORDER BY tag)) AS tags"""


@dataclass(frozen=True)
class ModelStamp:
    """The identity of the model whose vectors a store holds."""

    name: str
    dim: int
    pooling: str
    sha256: str


@dataclass(frozen=True)
class NewMemory:
    """A memory to add. Tags are deduplicated and sorted when stored; meta values are strings."""

    text: str
    user: str | None = None
    conversation: str | None = None
    role: str | None = None
    tags: tuple[str, ...] = ()
    meta: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Memory:
    """A stored memory (without its vector)."""

    id: int
    text: str
    sha256: str
    created_at: str
    user: str | None
    conversation: str | None
    role: str | None
    tags: tuple[str, ...]
    meta: dict[str, str]


@dataclass(frozen=True)
class Filters:
    """Which memories a command looks at: every given field must match; all tags must be present."""

    user: str | None = None
    conversation: str | None = None
    tags: tuple[str, ...] = ()

    def is_empty(self) -> bool:
        """True when the filters select every memory."""
        return self.user is None and self.conversation is None and not self.tags


def text_sha256(text: str) -> str:
    """Hex sha256 of the UTF-8 bytes of a memory's text (the deduplication key)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def utc_now_iso() -> str:
    """The current time in UTC as ISO 8601 with milliseconds and a trailing Z."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) a store database in WAL mode and bring its schema up to date.

    Raises StoreCorruptError naming the file when it is not a usable SQLite database.
    """
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path}: {exc}") from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS:d}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
        fts.ensure_current(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise StoreError(f"{path} is locked by another process: {exc}") from exc
        raise StoreCorruptError(f"{path} is not a usable remem database: {exc}") from exc
    return conn


def _where(filters: Filters) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if filters.user is not None:
        clauses.append("m.user = ?")
        params.append(filters.user)
    if filters.conversation is not None:
        clauses.append("m.conversation = ?")
        params.append(filters.conversation)
    for tag in sorted(set(filters.tags)):
        clauses.append("m.id IN (SELECT memory_id FROM memory_tags WHERE tag = ?)")
        params.append(tag)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _memory(row: sqlite3.Row | tuple[Any, ...]) -> Memory:
    mid, text, sha, created, user, conversation, role, meta, tags = row
    return Memory(
        id=mid,
        text=text,
        sha256=sha,
        created_at=created,
        user=user,
        conversation=conversation,
        role=role,
        tags=tuple(json.loads(tags)),
        meta=json.loads(meta),
    )


class Records:
    """Queries and writes on one store database connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        """Wrap an open connection (see ``connect``)."""
        self.conn = conn

    def get_meta(self, key: str) -> str | None:
        """A value from the store's key/value table, or None."""
        row = self.conn.execute("SELECT value FROM store_meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Set a value in the store's key/value table (inside the caller's transaction)."""
        self.conn.execute(
            "INSERT INTO store_meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def find_duplicate(self, sha256: str, user: str | None, conversation: str | None) -> int | None:
        """The id of a memory with this text hash in the same user/conversation, if any."""
        row = self.conn.execute(
            "SELECT id FROM memories WHERE sha256 = ? AND ifnull(user, '') = ifnull(?, '') "
            "AND ifnull(conversation, '') = ifnull(?, '')",
            (sha256, user, conversation),
        ).fetchone()
        return None if row is None else int(row[0])

    def insert(self, memory: NewMemory, vector: bytes, created_at: str) -> int | None:
        """Insert a memory and its tags; None (and nothing written) if it is a duplicate."""
        cursor = self.conn.execute(
            "INSERT INTO memories (text, sha256, created_at, user, conversation, role, meta, vector) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (
                memory.text,
                text_sha256(memory.text),
                created_at,
                memory.user,
                memory.conversation,
                memory.role,
                json.dumps(dict(memory.meta), ensure_ascii=False, sort_keys=True),
                vector,
            ),
        )
        if cursor.rowcount == 0:
            return None
        memory_id = int(cursor.lastrowid or 0)
        fts.write_terms(self.conn, [(memory_id, memory.text)])
        self.conn.executemany(
            "INSERT INTO memory_tags (memory_id, tag) VALUES (?, ?)",
            [(memory_id, tag) for tag in sorted(set(memory.tags))],
        )
        return memory_id

    def count_and_max_id(self, up_to_id: int | None = None) -> tuple[int, int]:
        """(number of memories, largest id) — only ids ≤ ``up_to_id`` when given; (0, -1) if none."""
        sql, params = "SELECT count(*), ifnull(max(id), -1) FROM memories", []
        if up_to_id is not None:
            sql, params = sql + " WHERE id <= ?", [up_to_id]
        count, max_id = self.conn.execute(sql, params).fetchone()
        return int(count), int(max_id)

    def iter_vectors(self, after_id: int = -1, batch: int = 4096) -> Iterator[list[tuple[int, bytes]]]:
        """Stored (id, float32 bytes) pairs with id > ``after_id``, in id order, in chunks."""
        cursor = self.conn.execute("SELECT id, vector FROM memories WHERE id > ? ORDER BY id", (after_id,))
        while chunk := cursor.fetchmany(batch):
            yield [(int(mid), bytes(blob)) for mid, blob in chunk]

    def keyword_search(
        self, text: str, filters: Filters, limit: int, among: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """BM25 top ``limit`` among the filtered memories (and only ``among`` if given), best first.

        Scores are FTS5's BM25 negated so that higher is better; [] when the text has no terms.
        """
        match = fts_query(text)
        if match is None or (among is not None and not among):
            return []
        where, params = _where(filters)
        clauses = [where.replace(" WHERE ", " AND ", 1)]
        if among is not None:
            clauses.append(f" AND m.id IN ({','.join('?' * len(among))})")
            params = [*params, *among]
        sql = (
            "SELECT m.id, -bm25(memories_fts) AS score FROM memories_fts JOIN memories m "
            f"ON m.id = memories_fts.rowid WHERE memories_fts MATCH ?{''.join(clauses)} "
            "ORDER BY score DESC, m.id LIMIT ?"
        )
        return [(int(i), float(score)) for i, score in self.conn.execute(sql, [match, *params, limit])]

    def keyword_coverage(self, text: str, ids: Sequence[int]) -> dict[int, float]:
        """For each id, the share of the query's term weight (IDF) that the memory matches, 0..1.

        IDF is Lucene's ln(1 + (N - n + 0.5) / (n + 0.5)) over the whole store, so a rare term such
        as an identifier weighs far more than a common word.
        """
        terms = term_queries(text)
        (total,) = self.conn.execute("SELECT count(*) FROM memories_fts").fetchone()
        marks = ",".join("?" * len(ids))
        weights, matched = [], []
        for term in terms:
            (count,) = self.conn.execute(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (term,)
            ).fetchone()
            weights.append(math.log(1 + (total - count + 0.5) / (count + 0.5)))
            sql = f"SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN ({marks})"
            matched.append({int(r[0]) for r in self.conn.execute(sql, [term, *ids])})
        whole = sum(weights) or 1.0
        return {
            mid: sum(w for w, hit in zip(weights, matched, strict=True) if mid in hit) / whole for mid in ids
        }

    def vectors_of(self, ids: Sequence[int]) -> dict[int, bytes]:
        """The stored float32 vector bytes of these memories (missing ids are absent)."""
        found: dict[int, bytes] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for mid, blob in self.conn.execute(
                f"SELECT id, vector FROM memories WHERE id IN ({marks})", chunk
            ):
                found[int(mid)] = bytes(blob)
        return found

    def candidate_ids(self, filters: Filters) -> list[int]:
        """Ids of every memory the filters select, ascending."""
        where, params = _where(filters)
        return [
            int(r[0]) for r in self.conn.execute(f"SELECT m.id FROM memories m{where} ORDER BY m.id", params)
        ]

    def get_many(self, ids: Sequence[int]) -> dict[int, Memory]:
        """The memories with these ids (missing ids are absent from the result)."""
        found: dict[int, Memory] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for row in self.conn.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE m.id IN ({marks})", chunk
            ):
                memory = _memory(row)
                found[memory.id] = memory
        return found

    def newest(self, filters: Filters, limit: int) -> list[Memory]:
        """Up to ``limit`` memories the filters select, newest first (ties: higher id first)."""
        where, params = _where(filters)
        sql = f"SELECT {_MEMORY_COLUMNS} FROM memories m{where} ORDER BY m.created_at DESC, m.id DESC LIMIT ?"
        return [_memory(row) for row in self.conn.execute(sql, [*params, limit])]

    def iter_all(self, filters: Filters | None = None) -> Iterator[Memory]:
        """Every memory the filters select, in id order, streamed."""
        where, params = _where(filters or Filters())
        for row in self.conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories m{where} ORDER BY m.id", params
        ):
            yield _memory(row)
