"""The keyword lane's heads kept in the store (``heads``: "Stored heads"): the table
``keyword_heads`` taken (``take_all``, in one read snapshot) and written (``save``, in one
transaction under the writers' lock), when they are ``behind``, and checked by ``verify``.

Taking them costs about 1 µs a holder of each token more than ``heads.CHEAP_HOLDERS`` memories
hold: at 1,000,000 memories (bench/scale.py's corpus) 12 s on one core for 2,190 tokens, 18 MB.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from itertools import pairwise

from remem.backends.analyzer import quoted_term
from remem.backends.local import bm25, fts, heads, meta
from remem.backends.local.transactions import atomic, snapshot

#: A stored head's holders: a top of up to ``heads.MAX_LIMIT`` takes the first 2 × limit. At a
#: million memories (bench/scale.py's corpus) 2,263 tokens have more than ``heads.CHEAP_HOLDERS``
#: holders, 2,190 of them their own stem (``take_all``): 18 MB, taken in 12 s on one core.
STORED_DEPTH = 2 * heads.MAX_LIMIT
#: The stored heads are taken again once this many memories were added since (half of
#: ``heads.STALE_AFTER``, so that they are taken again before they stop serving).
REFRESH_AFTER = heads.STALE_AFTER // 2
#: ... or once this many keyword rows were rewritten in place since (half of ``fts.REWRITES_KEPT``).
REFRESH_REWRITES = fts.REWRITES_KEPT // 2
#: How many stored heads ``remem doctor`` checks against the memories (spread over the table).
CHECKED = 8
#: ``store_meta``'s record of the stored heads: the highest id and the rewrites when taken.
STORED_KEY = "keyword_heads"


@dataclass(frozen=True)
class Taken:
    """Stored heads taken in one snapshot (``take_all``), to be written by ``save``."""

    now: heads.State
    rows: list[tuple[str, float, float, int, int, bytes, bytes]]


def behind(conn: sqlite3.Connection) -> bool:
    """Whether the stored heads are to be taken again: a store of at least ``heads.PRUNE_FROM``
    memories where ``REFRESH_REWRITES`` keyword rows were rewritten, or ``REFRESH_AFTER`` memories
    were added, since they were taken (or never were)."""
    now = heads.state(conn)
    if now.rows < heads.PRUNE_FROM:
        return False
    recorded = _recorded(conn)
    if recorded is None:
        return True
    return not 0 <= now.rewrites - recorded[1] <= REFRESH_REWRITES or now.last - recorded[0] > REFRESH_AFTER


def take_all(conn: sqlite3.Connection) -> Taken:
    """The head over every memory of each token more than ``heads.CHEAP_HOLDERS`` memories hold,
    at most ``STORED_DEPTH`` holders each, in one read snapshot (``conn`` outside a transaction)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.keyword_terms USING fts5vocab(main, memories_fts, row)"
    )
    with snapshot(conn):
        now = heads.state(conn)
        held = [
            str(row[0])
            for row in conn.execute(
                "SELECT term FROM temp.keyword_terms WHERE doc > ?", (heads.CHEAP_HOLDERS,)
            )
        ]
        rows = []
        for word, token in zip(held, fts.tokens_of(conn, held), strict=True):
            if token != word:  # a stem whose own stem differs: no query word's match is its holders
                continue
            term = quoted_term(word)
            best = conn.execute(
                f"SELECT memories_fts.rowid, {heads.SCORE} AS score FROM memories_fts "
                "WHERE memories_fts MATCH ? ORDER BY score DESC, memories_fts.rowid LIMIT ?",
                (term, STORED_DEPTH + 1),
            ).fetchall()
            ids = heads.packed("q", (int(r[0]) for r in best[:STORED_DEPTH]))
            shares = heads.packed("d", (float(r[1]) for r in best))
            idf = bm25.idf(now.rows, fts.count(conn, term))  # as the lane counts them
            rows.append((word, idf, now.mean, now.last, now.rewrites, ids, shares))
    return Taken(now, rows)


def save(conn: sqlite3.Connection, taken: Taken, *, force: bool = False) -> int:
    """Write ``taken`` as the stored heads, in the caller's transaction under the writers' lock,
    unless heads taken later are stored already (and not ``force``); how many terms' heads were
    written."""
    recorded = _recorded(conn)
    later = recorded is not None and recorded[0] > taken.now.last and recorded[1] >= taken.now.rewrites
    if later and not force:
        return 0
    conn.execute("DELETE FROM keyword_heads")
    conn.executemany("INSERT INTO keyword_heads VALUES (?, ?, ?, ?, ?, ?, ?)", taken.rows)
    meta.put(conn, STORED_KEY, f"{taken.now.last} {taken.now.rewrites}")
    return len(taken.rows)


def refresh(conn: sqlite3.Connection, lock: Callable[[], AbstractContextManager[None]]) -> int:
    """Take the stored heads again (``take_all``, holding no lock) and write them (``save``) in one
    transaction under the writers' ``lock``; how many terms' heads were written."""
    taken = take_all(conn)
    with lock(), atomic(conn):
        return save(conn, taken)


def verify(conn: sqlite3.Connection, sample: int = CHECKED) -> tuple[int, int, int]:
    """The stored heads (terms), how many of a ``sample`` of them (spread over the table) still
    serve (``heads.usable``), and how many of those are wrong: damaged, or some holder taken into
    account (not added or rewritten since) outside the head scores more than the head's bound now."""
    now = heads.state(conn)
    rows = conn.execute(
        "SELECT term, idf, mean, last, rewrites, ids, shares FROM keyword_heads ORDER BY term"
    )
    stored = rows.fetchall()
    serving = wrong = 0
    for term, idf, mean, last, rewrites, ids, shares in stored[:: max(1, len(stored) // sample)][:sample]:
        holders, best = heads.unpacked("q", ids), heads.unpacked("d", shares)
        if len(best) - len(holders) not in (0, 1) or any(a < b for a, b in pairwise(best)):
            wrong += 1
            continue
        head = heads.Head(
            holders, best[len(holders)] if len(best) > len(holders) else 0.0, idf, mean, last, rewrites
        )
        if not heads.usable(head, now, 0):
            continue
        serving += 1
        match = quoted_term(term)
        outside = conn.execute(
            f"SELECT {heads.SCORE} AS score FROM memories_fts WHERE memories_fts MATCH ? AND rowid <= ? "
            "AND rowid NOT IN (SELECT value FROM json_each(?)) "
            "AND rowid NOT IN (SELECT memory_id FROM keyword_rewrites WHERE seq > ?) "
            "ORDER BY score DESC LIMIT 1",
            (match, last, json.dumps(list(holders)), rewrites),
        ).fetchone()
        bound = heads.bound(head, bm25.idf(now.rows, fts.count(conn, match)), now.mean)
        wrong += outside is not None and float(outside[0]) > bound
    return len(stored), serving, wrong


def retake(conn: sqlite3.Connection) -> int:
    """Take the stored heads again and write them over whatever is stored, the caller holding the
    writers' lock (a reindex, a repair); how many terms' heads were written."""
    taken = take_all(conn)
    with atomic(conn):
        return save(conn, taken, force=True)


def _recorded(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """The highest id and the rewrites when the stored heads were taken (None: never)."""
    value = meta.get(conn, STORED_KEY)
    if value is None:
        return None
    last, rewrites = value.split()
    return int(last), int(rewrites)
