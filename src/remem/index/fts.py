"""Keeping the FTS5 keyword table in step with the memories (called inside the writer's transaction)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from remem.index.keywords import ANALYZER_VERSION, FTS_TOKENIZER, index_text

CREATE_TABLE = f'CREATE VIRTUAL TABLE memories_fts USING fts5(terms, tokenize = "{FTS_TOKENIZER}")'
ANALYZER_KEY = "keyword_analyzer"


def write_terms(conn: sqlite3.Connection, rows: Iterable[tuple[int, str]]) -> None:
    """Index (memory id, text) pairs in the keyword table."""
    conn.executemany(
        "INSERT INTO memories_fts (rowid, terms) VALUES (?, ?)", ((i, index_text(t)) for i, t in rows)
    )


def rebuild(conn: sqlite3.Connection) -> int:
    """Re-analyze every memory into the keyword table and record the analyzer version; returns rows."""
    conn.execute("DELETE FROM memories_fts")
    rows = conn.execute("SELECT id, text FROM memories").fetchall()
    write_terms(conn, rows)
    conn.execute(
        "INSERT INTO store_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (ANALYZER_KEY, ANALYZER_VERSION),
    )
    return len(rows)


def is_current(conn: sqlite3.Connection) -> bool:
    """True when the keyword table was built by this version of the analyzer."""
    row = conn.execute("SELECT value FROM store_meta WHERE key = ?", (ANALYZER_KEY,)).fetchone()
    return row is not None and row[0] == ANALYZER_VERSION


def ensure_current(conn: sqlite3.Connection) -> None:
    """Rebuild the keyword table if an older analyzer built it (autocommit connection; own transaction)."""
    if is_current(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if not is_current(conn):  # another process may have rebuilt it meanwhile
            rebuild(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
