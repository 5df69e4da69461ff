"""The FTS5 keyword table: kept in step with the memories (inside the writer's transaction), searched."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from remem.backends.analyzer import (
    ANALYZER_VERSION,
    CONTEXT_WEIGHT,
    IDENTIFIER_PUNCTUATION,
    index_text,
    quoted_term,
    sure_terms,
)
from remem.backends.local import filtering, meta
from remem.backends.local.transactions import atomic
from remem.types import Filters

FTS_TOKENIZER = f"porter unicode61 remove_diacritics 2 tokenchars '{IDENTIFIER_PUNCTUATION}'"
#: Two columns: a memory's own terms (text and names) and those of its context (the turns before it).
CREATE_TABLE = f'CREATE VIRTUAL TABLE memories_fts USING fts5(terms, context, tokenize = "{FTS_TOKENIZER}")'

ANALYZER_KEY = "keyword_analyzer"
#: How many memories' keyword rows were rewritten in place (same id): ``heads`` keeps a bound on
#: each term's holders that such a rewrite may break, and an added memory may not.
REWRITES_KEY = "keyword_rewrites"
#: The newest rewrites are logged (``keyword_rewrites``: the count after each, and the memory), so
#: that ``heads`` takes a rewritten memory as a candidate, as it does an added one, instead of taking
#: every head again after an edit; a head taken this many rewrites ago or more is taken again.
REWRITES_KEPT = 1_000


#: A memory's names for the keyword table: role, user, and its tags (space-separated).
NAMES_SQL = "m.role, m.user, (SELECT group_concat(tag, ' ') FROM memory_tags t WHERE t.memory_id = m.id)"


def tokens_of(conn: sqlite3.Connection, words: Sequence[str]) -> list[str | None]:
    """Each of ``words`` as the keyword table's tokenizer indexes it (Porter's stem: "procedure"
    is "procedur"), or None when it makes no token or more than one; through a table of this
    connection's temporary schema (writes nothing to the store, inside a read snapshot too)."""
    conn.execute(
        f'CREATE VIRTUAL TABLE IF NOT EXISTS temp.stems USING fts5(word, tokenize = "{FTS_TOKENIZER}")'
    )
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.stem_tokens USING fts5vocab(temp, stems, instance)")
    conn.execute("DELETE FROM temp.stems")
    conn.executemany("INSERT INTO temp.stems (rowid, word) VALUES (?, ?)", enumerate(words))
    made: dict[int, list[str]] = {}
    for place, token in conn.execute("SELECT doc, term FROM temp.stem_tokens"):
        made.setdefault(int(place), []).append(str(token))
    conn.execute("DELETE FROM temp.stems")
    return [made[i][0] if len(made.get(i, ())) == 1 else None for i in range(len(words))]


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


def rewrite_terms(conn: sqlite3.Connection, memory_ids: Sequence[int]) -> None:
    """Index these memories again as they are now in the database (after an edit), counted as a
    rewrite (``REWRITES_KEY``); inside the writer's transaction."""
    marks = ",".join("?" * len(memory_ids))
    conn.execute(f"DELETE FROM memories_fts WHERE rowid IN ({marks})", list(memory_ids))
    write_stored_terms(conn, memory_ids)
    before = rewrites(conn)
    conn.executemany(
        "INSERT INTO keyword_rewrites (seq, memory_id) VALUES (?, ?)",
        [(before + place, mid) for place, mid in enumerate(memory_ids, start=1)],
    )
    _count_rewrites(conn, before + len(memory_ids))


def rewrites(conn: sqlite3.Connection) -> int:
    """How many keyword rows were rewritten in place (``rewrite_terms``; a ``rebuild`` counts as
    ``REWRITES_KEPT`` more than any head can be behind)."""
    return int(meta.get(conn, REWRITES_KEY) or 0)


def _count_rewrites(conn: sqlite3.Connection, count: int) -> None:
    """Record ``count`` as the rewrites so far, and keep the last ``REWRITES_KEPT`` of their log."""
    meta.put(conn, REWRITES_KEY, str(count))
    conn.execute("DELETE FROM keyword_rewrites WHERE seq <= ?", (count - REWRITES_KEPT,))


def rebuild(conn: sqlite3.Connection) -> int:
    """Re-analyze every memory into the keyword table and record the analyzer version; returns rows."""
    conn.execute("DELETE FROM memories_fts")
    count = write_stored_terms(conn)
    _count_rewrites(conn, rewrites(conn) + REWRITES_KEPT + 1)  # every memory rewritten: no head holds
    meta.put(conn, ANALYZER_KEY, ANALYZER_VERSION)
    return count


def is_current(conn: sqlite3.Connection) -> bool:
    """True when the keyword table was built by this version of the analyzer."""
    return meta.get(conn, ANALYZER_KEY) == ANALYZER_VERSION


def ensure_current(conn: sqlite3.Connection) -> None:
    """Rebuild the keyword table if an older analyzer built it (autocommit connection; own transaction)."""
    if is_current(conn):
        return
    with atomic(conn):
        if not is_current(conn):  # another process may have rebuilt it meanwhile
            rebuild(conn)


def search(
    conn: sqlite3.Connection, match: str, filters: Filters, limit: int, among: Sequence[int] | None = None
) -> list[tuple[int, float]]:
    """BM25 top ``limit`` (memory id, score) among the filtered memories (only ``among`` if given)
    that the FTS5 expression ``match`` selects, best first. Scores are FTS5's BM25 negated so that
    higher is better."""
    if among is not None and not among:
        return []
    # Every match is checked in turn (SQLite computes BM25 only for those that pass): tags by the tag
    # table's key, and the memory row is looked up only when the filters read it. At 100k memories
    # that took a query 3.9 ms unfiltered instead of 7.4 with the lookup, and 2.6 ms for a tag held
    # by a tenth instead of 13.4 when the tagged memories were listed first. A filter on user,
    # conversation or role that selects few memories lists them instead (``conditions``).
    joined, where, params = conditions(conn, filters, among, "JOIN")
    sql = (
        f"SELECT memories_fts.rowid, -bm25(memories_fts, 1.0, {CONTEXT_WEIGHT}) AS score FROM memories_fts"
        f"{joined} WHERE memories_fts MATCH ? AND {where} ORDER BY score DESC, memories_fts.rowid LIMIT ?"
    )
    return [(int(i), float(score)) for i, score in conn.execute(sql, [match, *params, limit])]


#: A filter on user, conversation or role (``filtering.by_columns``) that selects at most a
#: LISTED_SHARE-th of the memories (and at least LISTED_MIN) is checked against its memories listed
#: once through their index, not by reading each match's memory row (≈1 µs each): at 100,000
#: memories (bench/search.py's corpus) a conversation holding 1 % of them took the lane's top 100
#: 4.3 ms instead of 26.5; its user selecting all of them 67 ms instead of 48.
LISTED_SHARE = 20
LISTED_MIN = 1_000


def listed_through(conn: sqlite3.Connection, filters: Filters) -> str | None:
    """For filters ``by_columns`` that select few memories (LISTED_SHARE), the column whose index
    lists them with the fewest rows read: each named column's memories counted alone through its
    index, up to that bound; None when no column selects few (or the filters read other columns)."""
    if not filtering.by_columns(filters):
        return None
    bound = max(LISTED_MIN, row_count(conn) // LISTED_SHARE)
    best: tuple[int, str] | None = None
    for name in filtering.named(filters):
        clause, params = filtering.column(filters, name)
        sql = f"SELECT count(*) FROM (SELECT 1 FROM memories m WHERE {clause} LIMIT ?)"
        selected = int(conn.execute(sql, [*params, bound + 1]).fetchone()[0])
        if selected <= bound and (best is None or selected < best[0]):
            best = (selected, name)
    return None if best is None else best[1]


def selects_every(conn: sqlite3.Connection, filters: Filters) -> bool:
    """True when the filters' conditions on user, conversation and role (``filtering.columns``;
    at least one) hold for every memory, so that they select nothing less than the store: no
    memory in any of the ranges that fail one of them (``filtering.failing``), each looked for by
    one seek into its column's index (every row was read when all pass: 35 ms at 100,000 memories,
    taken again after each write)."""
    probes: list[str] = []
    params: list[Any] = []
    for name in filtering.named(filters):
        for clause, values in filtering.failing(filters, name):
            probes.append(f"EXISTS (SELECT 1 FROM memories m WHERE {clause})")
            params.extend(values)
    if not probes:
        return False
    return not conn.execute(f"SELECT {' OR '.join(probes)}", params).fetchone()[0]


def conditions(
    conn: sqlite3.Connection, filters: Filters, among: Sequence[int] | None, join: str
) -> tuple[str, str, list[Any]]:
    """How a query over FTS5's matches checks the filters and ``among``: the memory row's ``join``
    (``JOIN``, ``CROSS JOIN``; empty when no row is read), the condition and its parameters. Each
    match is checked in turn; a filter selecting few memories (``listed_through``) against them
    listed once."""
    through = listed_through(conn, filters)
    if through is not None:
        where, params = filtering.listed(filters, "memories_fts.rowid", through)
        joined = ""
    else:
        where, params = filtering.where(filters, per_row=True, memory_id="memories_fts.rowid")
        row = filtering.needs_memory_row(filters)
        joined = f" {join} memories m ON m.id = memories_fts.rowid" if row else ""
    if among is not None:  # one parameter for any number of ids; the unary + keeps FTS5 from running
        # the whole MATCH once per id (10.6 ms for 100 ids at 10k memories, against 0.36 ms for one
        # pass over the matches that checks each against the ids; 14.3 against 0.76 ms at 100k)
        where += " AND +memories_fts.rowid IN (SELECT value FROM json_each(?))"
        params = [*params, json.dumps(list(among))]
    return joined, where, params


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


def averages(conn: sqlite3.Connection) -> tuple[int, list[int]]:
    """The number of memories in the keyword table and the number of tokens in each of its columns,
    as FTS5 keeps them for BM25: its averages record, varints (``count(*)`` on the table read every
    row: 3-65 ms for 10k memories)."""
    row = conn.execute("SELECT block FROM memories_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:  # FTS5 writes the record with the first row
        return 0, [0, 0]
    values = varints(bytes(row[0]))
    return values[0], values[1:]


def row_count(conn: sqlite3.Connection) -> int:
    """The number of memories in the keyword table (``averages``)."""
    return averages(conn)[0]


def varints(data: bytes) -> list[int]:
    """The varints that make up ``data`` (FTS5's averages and docsize records)."""
    values, at = [], 0
    while at < len(data):
        value, used = _varint(data[at : at + 9])
        values.append(value)
        at += used
    return values


def _varint(data: bytes) -> tuple[int, int]:
    """SQLite's variable-length integer at the start of ``data`` (big-endian, 7 bits a byte, the
    ninth byte all 8) and the number of bytes it took."""
    value = 0
    for place, byte in enumerate(data[:9]):
        if place == 8:
            return (value << 8) | byte, 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, place + 1
    raise ValueError("a truncated varint in a record of the keyword table")


def count(conn: sqlite3.Connection, match: str, scope: Filters | None = None) -> int:
    """How many memories the FTS5 expression ``match`` selects (one pass over its doclists in SQLite,
    ≈25-60 ns a posting), of those ``scope`` selects if given (each holder checked as ``conditions``
    says: against the scope's memories listed once when it selects few, else by its row)."""
    if scope is None:
        sql, params = "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", [match]
    else:  # CROSS JOIN: the doclist walked, each holder's row looked up (not a MATCH per row)
        joined, where, scoped = conditions(conn, scope, None, "CROSS JOIN")
        sql = f"SELECT count(*) FROM memories_fts{joined} WHERE memories_fts MATCH ? AND {where}"
        params = [match, *scoped]
    return int(conn.execute(sql, params).fetchone()[0])


def scoped_rows(conn: sqlite3.Connection, scope: Filters) -> int:
    """How many memories ``scope`` selects (every memory is a row of the keyword table)."""
    where, params = filtering.where(scope)
    return int(conn.execute(f"SELECT count(*) FROM memories m WHERE {where}", params).fetchone()[0])


def scoped_averages(conn: sqlite3.Connection, scope: Filters) -> tuple[int, int]:
    """``averages`` of the memories ``scope`` selects: how many are in the keyword table, and their
    tokens in all columns (from each one's ``docsize`` record)."""
    where, params = filtering.where(scope)
    rows = conn.execute(
        f"SELECT d.sz FROM memories_fts_docsize d JOIN memories m ON m.id = d.id WHERE {where}", params
    ).fetchall()
    return len(rows), sum(tokens(bytes(row[0] or b"")) for row in rows)


def tokens(docsize: bytes) -> int:
    """A row's tokens in all columns, from its ``docsize`` record (a varint per column; a column
    under 128 tokens is one byte: the sum of the bytes)."""
    return sum(docsize) if max(docsize, default=0) < 0x80 else sum(varints(docsize))


def holders(
    conn: sqlite3.Connection, match: str, filters: Filters, among: Sequence[int] | None = None
) -> list[int]:
    """The ids of every filtered memory (only ``among`` if given) the FTS5 expression ``match``
    selects, in id order."""
    # CROSS JOIN: the doclist walked, not a MATCH per memory row
    joined, where, params = conditions(conn, filters, among, "CROSS JOIN")
    rows = conn.execute(
        f"SELECT memories_fts.rowid FROM memories_fts{joined} WHERE memories_fts MATCH ? AND {where} "
        "ORDER BY memories_fts.rowid",
        [match, *params],
    )
    return [int(r[0]) for r in rows]


#: Which of some memories an expression selects is found by walking its doclists and checking each
#: posting against the ids (≈100-200 ns a posting), or by looking each id up (FTS5 runs the query
#: once per id: 30-80 µs each in a doclist of 18,000-1,000,000 postings, which has an index of its
#: own; in a shorter one each lookup scans it: 214 µs an id for 7,200); bench/scale.py's 1M store.
SEEK_FROM = 20_000
#: One lookup costs about as much as walking this many postings (60 µs against 100 ns).
SEEK_POSTINGS = 600


def present(conn: sqlite3.Connection, ids: Sequence[int]) -> set[int]:
    """Those of ``ids`` that are rows of the keyword table (each has a ``docsize`` record)."""
    rows = conn.execute(
        "SELECT id FROM memories_fts_docsize WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(ids)),),
    )
    return {int(r[0]) for r in rows}


def members(conn: sqlite3.Connection, match: str, holders: int, ids: Sequence[int]) -> set[int]:
    """Those of ``ids`` that the FTS5 expression ``match`` (selecting ``holders`` memories) selects,
    by a walk or by lookups, whichever reads less (SEEK_FROM, SEEK_POSTINGS)."""
    if not ids or not holders:
        return set()
    seek = holders >= SEEK_FROM and holders > SEEK_POSTINGS * len(ids)
    rowid = "rowid" if seek else "+rowid"  # the unary + keeps FTS5 from running the query once per id
    rows = conn.execute(
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
        f"AND {rowid} IN (SELECT value FROM json_each(?))",
        (match, json.dumps(list(ids))),
    )
    return {int(r[0]) for r in rows}
