"""The local keyword lane above FTS5: counts kept per state of the keyword index, near-zero-IDF terms
of big stores (``remem.backends.bounds``), and how much of a query its matches cover.

FTS5's ``bm25()`` scores every memory its MATCH selects: ≈0.7-0.9 µs each on a 1,000,000-memory
store, so a query's cost follows how many memories hold its terms. What changes no ranking is not
paid for again:

- **Counts per state.** How many memories hold each term (for IDF and coverage) is counted once per
  state of the keyword index (``stamp``: FTS5's averages and structure records, which every write
  changes), not read again, or into Python, by every search.
- **Near-zero-IDF terms** (FTS5 gives one that at least half the memories hold an IDF of 1e-6) held
  by more than ``bounds.COMMON_HOLDERS`` memories are left out of the ranking query when the query
  has other terms; memories holding only such terms rank after the others, by BM25 among the newest
  ``bounds.WINDOW`` of them (``bm25.py``).
- **Scoped statistics.** With a ``scope`` (the memories a caller may see, ``Memories.search``),
  N, each term's holders and the mean length are those of the scope's memories (counted once per
  state and scope), and every match is scored by ``bm25.scored`` in Python with them: FTS5's
  ``bm25()`` knows only the whole table's, and would tell a caller about memories it may not see.
- **Coverage by bounds.** How much of the query's IDF weight a match covers is summed term by term,
  rarest first; a memory is no longer looked up once its share surely reaches what the caller counts
  as enough.
"""

from __future__ import annotations

import functools
import math
import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from remem.backends import bounds
from remem.backends.analyzer import term_queries
from remem.backends.base import Coverage, Scored
from remem.backends.local import bm25, filtering, fts, heads
from remem.backends.local.transactions import snapshot
from remem.backends.statecache import SnapshotCache
from remem.types import Filters

#: Values kept per state of the keyword index (two counts a term: 2,048 terms).
KEPT_COUNTS = 4_096
#: A memory whose share is within this of ``enough`` is given its exact share (capped).
MARGIN = 1e-9


class KeywordCounts:
    """How many memories hold each term, kept while the keyword index is in the same state."""

    def __init__(self) -> None:
        """An empty cache (thread-safe)."""
        self._cache = SnapshotCache(KEPT_COUNTS)
        #: Each term's best holders, kept across states of the index (``heads``).
        self.heads = heads.Heads()

    def stamp(self, conn: sqlite3.Connection) -> bytes:
        """The state of the keyword index that ``conn`` reads: FTS5's averages record (memories and
        tokens) and its structure record (segments and a counter of writes), which every insert,
        delete and merge rewrites."""
        rows = conn.execute("SELECT block FROM memories_fts_data WHERE id IN (1, 10) ORDER BY id").fetchall()
        return b"\0".join(bytes(row[0] or b"") for row in rows)

    def holders(
        self, conn: sqlite3.Connection, stamp: bytes, match: str, scope: Filters | None = None
    ) -> int:
        """How many memories (of ``scope``'s, if given) the FTS5 expression ``match`` selects,
        counted once per ``stamp``."""
        return self._cache.get(stamp, (match, scope), lambda: fts.count(conn, match, scope))

    def rows(self, conn: sqlite3.Connection, stamp: bytes, scope: Filters | None) -> int:
        """How many memories (of ``scope``'s, if given) the keyword table holds; a scope's counted
        once per ``stamp`` (an index count, not ``size``'s read of every length)."""
        if scope is None:
            return fts.row_count(conn)
        return self._cache.get(stamp, ("rows", scope), lambda: fts.scoped_rows(conn, scope))

    def needed(self, conn: sqlite3.Connection, stamp: bytes, filters: Filters) -> Filters:
        """``filters`` without those of their conditions on user, conversation and role that hold
        for every memory (``fts.selects_every``, each looked at alone once per ``stamp``): a user's
        filter on a store of that user's alone then reads no memory row per match (at 100,000
        memories the lane's top 100 took 48 ms with the row read, 16 without), and with a
        conversation's as well only the conversation's memories are listed."""
        kept = filters
        for name in filtering.named(filters):
            alone = _alone(filters, name)
            key = ("every", name, alone)
            if self._cache.get(stamp, key, functools.partial(fts.selects_every, conn, alone)):
                kept = _without(kept, name)
        return kept

    def listed(self, stamp: bytes, filters: Filters) -> int | None:
        """How many vectors a listing of those ``filters`` select found in this state (``lanes``)."""
        found = self._cache.peek(stamp, ("listed", filters))
        return None if found is None else int(found)

    def note_listed(self, stamp: bytes, filters: Filters, count: int) -> None:
        """Keep how many vectors ``filters`` select, as a listing found them (``listed``)."""
        self._cache.put(stamp, ("listed", filters), count)

    def size(self, conn: sqlite3.Connection, stamp: bytes, scope: Filters) -> tuple[int, float]:
        """``scope``'s rows and their mean length in tokens, as FTS5's BM25 counts it, counted once
        per ``stamp``."""
        rows, tokens = self._cache.get(stamp, ("size", scope), lambda: fts.scoped_averages(conn, scope))
        return rows, max(tokens, 1) / max(rows, 1)


def _alone(filters: Filters, name: str) -> Filters:
    """The filters' condition on the memory row's column ``name`` (``filtering.COLUMNS``) alone."""
    if name == "user":
        return Filters(user=filters.user, shared=filters.shared)
    return (
        Filters(conversation=filters.conversation) if name == "conversation" else Filters(role=filters.role)
    )


def _without(filters: Filters, name: str) -> Filters:
    """``filters`` without their condition on the memory row's column ``name``."""
    if name == "user":
        return replace(filters, user=None, shared=False)
    return replace(filters, conversation=None) if name == "conversation" else replace(filters, role=None)


@dataclass(frozen=True)
class Plan:
    """How a query is ranked: ``scored`` terms by FTS5's BM25 over all their holders (in the query's
    order), ``common`` near-zero-IDF terms among their newest holders only."""

    scored: list[str]
    common: list[str]


def plan(
    conn: sqlite3.Connection, counts: KeywordCounts, stamp: bytes, text: str, scope: Filters | None = None
) -> Plan:
    """The plan of ``text``'s terms (see the module docstring), with the statistics of ``scope``'s
    memories if given; both lists empty without terms."""
    terms = term_queries(text)
    rows = counts.rows(conn, stamp, scope)
    common = []
    for term in terms:
        if term.endswith("*") or rows <= bounds.COMMON_HOLDERS:  # never a hash prefix, nor in a small store
            continue
        held = counts.holders(conn, stamp, term, scope)
        if bounds.near_zero(bm25.idf(rows, held), held):
            common.append(term)
    return Plan([t for t in terms if t not in common], common)


def top_and_rest(
    conn: sqlite3.Connection,
    counts: KeywordCounts,
    text: str,
    filters: Filters,
    limit: int,
    among: Sequence[int] | None = None,
    scope: Filters | None = None,
    more: int = 0,
    scoring: Sequence[int] = (),
) -> tuple[list[Scored], list[Scored] | None]:
    """BM25 top ``limit`` (memory id, score; higher is better) among the filtered memories (only
    ``among`` if given), best first; [] when the text has no terms. Exact BM25 unless the query has
    near-zero-IDF terms on a big store (the module docstring). With ``scope`` (which must hold every
    filtered memory), its memories' statistics alone rank them. And with ``more``, every further
    filtered match (best first, as the top ranks them) when they are at most ``more``: one
    statement of ``limit`` + ``more`` rows where FTS5's ``bm25()`` scores every match anyway (a
    small store, no ``among``, no common terms, the whole store's statistics) and they may fit
    (``_may_fit``); or, with ``scoring``, those of them among the filtered matches when the heads
    gave the top (``heads.top_scoring``) and no term is common; None when they are not known so."""
    if among is not None and not among:
        return [], []
    with snapshot(conn):
        stamp = counts.stamp(conn)
        filters = counts.needed(conn, stamp, filters)
        scope = _narrower(conn, counts, stamp, scope)
        query = plan(conn, counts, stamp, text, scope)
        size = None if scope is None else counts.size(conn, stamp, scope)
        mean = None if size is None else size[1]
        rest = None
        if not query.scored:
            found = []
        elif scope is None or size is None:
            small = (
                bool(more) and among is None and not query.common and fts.row_count(conn) < heads.PRUNE_FROM
            )
            if small and _may_fit(conn, counts, stamp, query.scored, filters, limit + more):
                found = fts.search(conn, " OR ".join(query.scored), filters, limit + more)
                found, rest = found[:limit], (found[limit:] if len(found) < limit + more else None)
            else:
                found, rest = _unscoped(conn, counts, stamp, query.scored, filters, limit, among, scoring)
                rest = None if query.common else rest
        else:
            found = _scoped(conn, counts, stamp, query.scored, filters, limit, among, scope, size)
        if query.common and len(found) < limit:  # every holder of a scored term is in: the rest hold
            skip = {mid for mid, _ in found}  # only common terms
            found += bm25.newest(conn, query.common, filters, limit - len(found), among, skip, mean)
        return found, rest


def _may_fit(
    conn: sqlite3.Connection,
    counts: KeywordCounts,
    stamp: bytes,
    terms: list[str],
    filters: Filters,
    most: int,
) -> bool:
    """Whether the filtered matches of ``terms`` may be fewer than ``most``: not when, unfiltered, a
    term alone is among the own terms of that many memories (``coverage`` counts the same per
    state), so that a broad query does not read rows past its top for nothing."""
    if not filters.is_empty():  # a filter's matches are fewer than the terms' holders
        return True
    return max(counts.holders(conn, stamp, f"terms : {term}") for term in terms) < most


def _unscoped(
    conn: sqlite3.Connection,
    counts: KeywordCounts,
    stamp: bytes,
    terms: list[str],
    filters: Filters,
    limit: int,
    among: Sequence[int] | None,
    scoring: Sequence[int] = (),
) -> tuple[list[Scored], list[Scored] | None]:
    """``fts.search`` over ``terms``; in a big store without ``among``, through the terms' heads
    when they show the top exact (``heads.top_scoring``: then with those of ``scoring`` that are
    filtered matches, if asked; else None)."""
    if among is None and fts.row_count(conn) >= heads.PRUNE_FROM:
        held = [counts.holders(conn, stamp, term) for term in terms]
        found = heads.top_scoring(conn, counts.heads, terms, held, filters, limit, scoring)
        if found is not None:
            return found[0], (found[1] if scoring else None)
    return fts.search(conn, " OR ".join(terms), filters, limit, among), None


def _narrower(
    conn: sqlite3.Connection, counts: KeywordCounts, stamp: bytes, scope: Filters | None
) -> Filters | None:
    """``scope``, or None when it sees every memory (its statistics are the whole store's: FTS5's
    ``bm25()`` ranks as it would, at its cost)."""
    return None if scope is None or counts.rows(conn, stamp, scope) >= fts.row_count(conn) else scope


def _scoped(
    conn: sqlite3.Connection,
    counts: KeywordCounts,
    stamp: bytes,
    terms: list[str],
    filters: Filters,
    limit: int,
    among: Sequence[int] | None,
    scope: Filters,
    size: tuple[int, float],
) -> list[Scored]:
    """``fts.search`` with the statistics of ``scope``'s memories (``size``: its rows and their mean
    length): every filtered holder of ``terms`` scored by ``bm25.scored``."""
    rows, mean = size
    idfs = [bm25.idf(rows, counts.holders(conn, stamp, term, scope)) for term in terms]
    ids = fts.holders(conn, " OR ".join(terms), filters, among)
    held = [counts.holders(conn, stamp, term) for term in terms]  # for bm25.counted
    return bm25.scored(conn, terms, ids, idfs, mean, limit, held)


def coverage(
    conn: sqlite3.Connection,
    counts: KeywordCounts,
    text: str,
    ids: Sequence[int],
    enough: float,
    scope: Filters | None = None,
) -> Coverage:
    """For each of ``ids``, the share of the query's term weight its own terms (not its context's)
    match, capped at ``enough``: IDF, Lucene's ln(1 + (N - n + 0.5) / (n + 0.5)) over the whole store
    (``scope``'s memories if given, which must hold ``ids``), so a rare term such as an identifier
    weighs far more than a common word; and that whole weight.

    Terms are looked up rarest first, and only for the memories still below ``enough``: one whose
    matched weight surely reaches it is not looked up again; the others get their exact share, summed
    in the query's order (within MARGIN of ``enough``, the exact share decides)."""
    with snapshot(conn):
        stamp = counts.stamp(conn)
        scope = _narrower(conn, counts, stamp, scope)
        total = counts.rows(conn, stamp, scope)
        own = [f"terms : {term}" for term in term_queries(text)]
        held = [counts.holders(conn, stamp, match, scope) for match in own]
        weights = [math.log(1 + (total - n + 0.5) / (n + 0.5)) for n in held]
        whole = sum(weights)
        got = dict.fromkeys(ids, 0.0)
        matched: dict[int, list[int]] = {mid: [] for mid in ids}
        open_ids = [mid for mid in got if whole and enough > MARGIN]
        for place in sorted(range(len(own)), key=lambda i: (held[i], i)):
            if not open_ids:
                break
            if held[place] >= total:  # a term every memory holds needs no look-up
                holding: Collection[int] = fts.present(conn, open_ids)
            else:
                holding = fts.members(conn, own[place], held[place], open_ids)
            for mid in holding:
                got[mid] += weights[place]
                matched[mid].append(place)
            open_ids = [mid for mid in open_ids if got[mid] / whole < enough + MARGIN]
    shares = {
        mid: min(sum(weights[i] for i in sorted(places)) / (whole or 1.0), enough)
        for mid, places in matched.items()
    }
    return Coverage({mid: shares[mid] for mid in ids}, whole)
