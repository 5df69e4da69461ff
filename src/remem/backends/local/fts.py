"""The FTS5 keyword table: kept in step with the memories (inside the writer's transaction), searched."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence

from remem.backends.analyzer import (
    ANALYZER_VERSION,
    CONTEXT_WEIGHT,
    IDENTIFIER_PUNCTUATION,
    fts_query,
    index_text,
    quoted_term,
    sure_terms,
    term_queries,
)
from remem.backends.local import filtering
from remem.backends.local.transactions import atomic
from remem.types import Filters

FTS_TOKENIZER = f"porter unicode61 remove_diacritics 2 tokenchars '{IDENTIFIER_PUNCTUATION}'"
#: Two columns: a memory's own terms (text and names) and those of its context (the turns before it).
CREATE_TABLE = f'CREATE VIRTUAL TABLE memories_fts USING fts5(terms, context, tokenize = "{FTS_TOKENIZER}")'

ANALYZER_KEY = "keyword_analyzer"


#: A memory's names for the keyword table: role, user, and its tags (space-separated).
NAMES_SQL = "m.role, m.user, (SELECT group_concat(tag, ' ') FROM memory_tags t WHERE t.memory_id = m.id)"


def write_stored_terms(conn: sqlite3.Connection, memory_ids: Sequence[int] | None = None) -> int:
    """Index stored memories (all, or only these; not indexed yet) with their names and context, as
    they are in the database."""
    where = "" if memory_ids is None else f"WHERE m.id IN ({','.join('?' * len(memory_ids))})"
    rows = conn.execute(
        f"SELECT m.id, m.text, m.context, {NAMES_SQL} FROM memories m {where}", list(memory_ids or [])
    ).fetchall()
    conn.executemany(
        "INSERT INTO memories_fts (rowid, terms, context) VALUES (?, ?, ?)",
        ((i, index_text(t, names), index_text(c)) for i, t, c, *names in rows),
    )
    return len(rows)


def rebuild(conn: sqlite3.Connection) -> int:
    """Re-analyze every memory into the keyword table and record the analyzer version; returns rows."""
    conn.execute("DELETE FROM memories_fts")
    count = write_stored_terms(conn)
    conn.execute(
        "INSERT INTO store_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (ANALYZER_KEY, ANALYZER_VERSION),
    )
    return count


def is_current(conn: sqlite3.Connection) -> bool:
    """True when the keyword table was built by this version of the analyzer."""
    row = conn.execute("SELECT value FROM store_meta WHERE key = ?", (ANALYZER_KEY,)).fetchone()
    return row is not None and row[0] == ANALYZER_VERSION


def ensure_current(conn: sqlite3.Connection) -> None:
    """Rebuild the keyword table if an older analyzer built it (autocommit connection; own transaction)."""
    if is_current(conn):
        return
    with atomic(conn):
        if not is_current(conn):  # another process may have rebuilt it meanwhile
            rebuild(conn)


def search(
    conn: sqlite3.Connection, text: str, filters: Filters, limit: int, among: Sequence[int] | None = None
) -> list[tuple[int, float]]:
    """BM25 top ``limit`` (memory id, score) among the filtered memories (only ``among`` if given),
    best first. Scores are FTS5's BM25 negated so that higher is better; [] when the text has no terms.
    """
    match = fts_query(text)
    if match is None or (among is not None and not among):
        return []
    # Every match is checked in turn (SQLite computes BM25 only for those that pass): tags by the tag
    # table's key, and the memory row is looked up only when the filters read it. At 100k memories
    # that took a query 3.9 ms unfiltered instead of 7.4 with the lookup, and 2.6 ms for a tag held
    # by a tenth instead of 13.4 when the tagged memories were listed first.
    where, params = filtering.where(filters, per_row=True, memory_id="memories_fts.rowid")
    if among is not None:  # one parameter for any number of ids; the unary + keeps FTS5 from running
        # the whole MATCH once per id (10.6 ms for 100 ids at 10k memories, against 0.36 ms for one
        # pass over the matches that checks each against the ids; 14.3 against 0.76 ms at 100k)
        where += " AND +memories_fts.rowid IN (SELECT value FROM json_each(?))"
        params = [*params, json.dumps(list(among))]
    joined = " JOIN memories m ON m.id = memories_fts.rowid" if filtering.needs_memory_row(filters) else ""
    sql = (
        f"SELECT memories_fts.rowid, -bm25(memories_fts, 1.0, {CONTEXT_WEIGHT}) AS score FROM memories_fts"
        f"{joined} WHERE memories_fts MATCH ? AND {where} ORDER BY score DESC, memories_fts.rowid LIMIT ?"
    )
    return [(int(i), float(score)) for i, score in conn.execute(sql, [match, *params, limit])]


def holding(conn: sqlite3.Connection, words: Sequence[str], filters: Filters) -> list[tuple[int, str]]:
    """(id, text) of the filtered memories that may hold every one of ``words`` (``Backend.texts_holding``),
    in id order: those whose own terms include each of the words that surely are terms."""
    where, params = filtering.where(filters)
    sure = sure_terms(words)
    if not sure:
        rows = conn.execute(f"SELECT m.id, m.text FROM memories m WHERE {where} ORDER BY m.id", params)
    else:
        match = "terms : (" + " AND ".join(quoted_term(word) for word in sure) + ")"
        rows = conn.execute(
            "SELECT m.id, m.text FROM memories_fts JOIN memories m ON m.id = memories_fts.rowid "
            f"WHERE memories_fts MATCH ? AND {where} ORDER BY m.id",
            [match, *params],
        )
    return [(int(mid), str(text)) for mid, text in rows]


def row_count(conn: sqlite3.Connection) -> int:
    """The number of memories in the keyword table, as FTS5 keeps it for BM25: the first varint of
    its averages record (``count(*)`` on the table read every row: 3-65 ms for 10k memories)."""
    row = conn.execute("SELECT block FROM memories_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:  # FTS5 writes the record with the first row
        return 0
    return _varint(bytes(row[0]))


def _varint(data: bytes) -> int:
    """SQLite's variable-length integer at the start of ``data`` (big-endian, 7 bits a byte, the
    ninth byte all 8)."""
    value = 0
    for place, byte in enumerate(data[:9]):
        if place == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    raise ValueError("a truncated varint in the keyword table's averages record")


def coverage(conn: sqlite3.Connection, text: str, ids: Sequence[int]) -> dict[int, float]:
    """For each id, the share of the query's term weight (IDF) that the memory matches, 0..1.

    IDF is Lucene's ln(1 + (N - n + 0.5) / (n + 0.5)) over the whole store, so a rare term such
    as an identifier weighs far more than a common word. One FTS5 query per term yields both the
    term's document count and which of ``ids`` contain it (reading a doclist is cheaper than
    probing it with an ``IN`` list).
    """
    total = row_count(conn)
    wanted = set(ids)
    weights, matched = [], []
    for term in term_queries(text):
        rows = {
            int(r[0])
            for r in conn.execute(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?", (f"terms : {term}",)
            )
        }
        weights.append(math.log(1 + (total - len(rows) + 0.5) / (len(rows) + 0.5)))
        matched.append(rows & wanted)
    whole = sum(weights) or 1.0
    pairs = list(zip(weights, matched, strict=True))
    return {mid: sum(weight for weight, hit in pairs if mid in hit) / whole for mid in ids}
