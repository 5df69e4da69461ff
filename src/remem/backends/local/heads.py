"""The keyword lane's top without scoring every match: each term's head, and a bound on the rest.

FTS5's ``bm25()`` costs ≈1-3 µs a match (it reads each match's length and instances), while walking
the same doclists costs ≈0.1 µs a posting: a query of 4-5 words matches 12,000 (p50) to 37,000
(p95) of a million memories (bench/scale.py's corpus). The memories that can still enter the top
``limit`` are few, and can be named without scoring the others:

- a memory holding two or more of the query's terms (an FTS5 expression, walked in SQLite);
- a memory holding one term ``t``: its score is ``t``'s share alone, so only if that share is at
  least the ``limit``-th best score found. Each term's **head** (its ``size`` best memories by its
  own share, kept from one search to the next) and a bound on every other holder's share (``rest``,
  the next one's) tell which can: none outside the head when ``rest`` is below that score;
- memories added since a head was taken (ids only grow: ``AUTOINCREMENT``), and memories whose
  keyword row was rewritten in place since (an edit of the text, tags or user: ``fts``'s log of
  the newest ``fts.REWRITES_KEPT`` rewrites).

Those candidates are scored by FTS5's own ``bm25()`` over the whole query, in one statement, so every
score is the double a full query gives; the top is exact when every term's bound is below the
``limit``-th score, else the full query runs (``None``). A share changes with the store's statistics:
a head stays a bound as the IDF changes (scaled by it) and the mean length grows (a share grows at
most by the ratio; a longer mean only lowers it), and is taken again when ``fts.REWRITES_KEPT``
keyword rows were rewritten in place (or the table rebuilt), or ``STALE_AFTER`` memories were
added, since.

Under filters the heads are taken over the filters (``over``): a tag's heads bound its memories.

**Stored heads.** A process meeting a query's words for the first time would pay the full query
(taking a head scores every holder of its term). So the heads over every memory of each term held
by more than ``CHEAP_HOLDERS`` memories are also kept in the store, in the table ``keyword_heads``:
512 best holders each, with their shares (a head of any smaller size is its first rows), named by
the token (a query word is looked up by its stem, ``Heads.token``). ``stored_heads`` takes them in
one read snapshot and writes them in one transaction: ``remem compact``, ``remem reindex``, a
long-lived process after its writes and an ingest of 5,000 memories or more do it when they are
behind (500 in-place rewrites, or 5,000 memories added, since). A stored head
serves under the same rules as one taken by the process (``usable``), so a table left behind by a
kill, a copy or an edit is never trusted past them: the worst it costs is the full query. Deleting
its rows loses nothing.

At 1,000,000 memories (bench/keyword_lane.py on bench/scale.py's store, a loaded 2-core machine),
the top 10 of 200 queries: full query 74 ms p50 / 216 ms p95, heads 18 / 50 ms; the top 100: 79 /
288 against 27 / 84 ms. Every top is identical to the full query's (94-96 % answered by the heads);
tests/unit/test_heads.py checks it on random stores as they grow and are edited.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from remem.backends.analyzer import CONTEXT_WEIGHT
from remem.backends.base import Scored
from remem.backends.local import bm25, fts
from remem.types import Filters

#: The fewest memories a head keeps: a top of ``limit`` keeps at least twice as many (64 for 10 and
#: 200 for 100 proved the top exact without the full query for 190 of 200 queries at 1M).
MIN_HEAD = 64
#: A top deeper than this takes the full query (a head of 2 × limit would cost as much to score).
MAX_LIMIT = 256
#: At most this many query terms (the expression of "two or more" grows with their square).
MAX_TERMS = 12
#: Heads kept (terms); the least recently used goes first.
KEPT_HEADS = 2_048
#: A head is taken again when this many memories were added since (their holders are candidates).
STALE_AFTER = 10_000
#: A term's head is taken the second time a process meets the term (taking one scores every holder
#: of the term, about what the full query costs): a one-off CLI search, and a stream of queries whose
#: words do not come back, pay nothing for heads they will not use again (bench/scale.py's 1M warm
#: queries, each new: 55 of a search's 98 ms went to heads taken at first sight). A term of at most
#: ``CHEAP_HOLDERS`` memories has its head taken at once.
CHEAP_HOLDERS = 1_000
#: Terms met once, remembered (the least recently met go first).
KEPT_MET = 8_192
#: From this many memories on, the keyword lane's top goes through the heads (``keywords``): below,
#: the full query scores every match in a few ms (10,000 memories: about 1,200 matches).
PRUNE_FROM = 20_000
#: A bound must be below the ``limit``-th score by this share (the float sums' rounding).
MARGIN = 1e-9
#: A head's key: its term, and the filters it was taken over (None: every memory).
Key = tuple[str, Filters | None]
SCORE = f"-bm25(memories_fts, 1.0, {CONTEXT_WEIGHT})"
_ROWIDS = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?"


@dataclass(frozen=True)
class Head:
    """A term's best holders by its own BM25 share, and what held when they were taken."""

    ids: array[int]
    #: The best share of a holder outside ``ids`` (0.0 when there is none).
    rest: float
    idf: float
    mean: float
    #: The highest id then, and the count of in-place rewrites (``fts.rewrites``).
    last: int
    rewrites: int


class Heads:
    """Each term's ``Head``, kept across searches while still a bound (thread-safe)."""

    def __init__(self, most: int = KEPT_HEADS) -> None:
        """An empty cache of at most ``most`` heads."""
        self._lock = threading.Lock()
        self._most = most
        self._heads: OrderedDict[Key, Head] = OrderedDict()
        self._met: OrderedDict[Key, None] = OrderedDict()
        self._tokens: OrderedDict[str, str | None] = OrderedDict()

    def met(self, key: Key) -> bool:
        """Whether ``key`` was met before (and remember it now)."""
        with self._lock:
            before = key in self._met
            self._met[key] = None
            self._met.move_to_end(key)
            while len(self._met) > KEPT_MET:
                self._met.popitem(last=False)
            return before

    def tokens(self, conn: sqlite3.Connection, terms: Sequence[str]) -> list[str | None]:
        """The token each query term (a quoted FTS5 string) selects, as stored heads are named (its
        stem), the ones not met before made in one go (``fts.tokens_of``); None for a prefix, or a
        term of no token or several."""
        words = [t for t in terms if len(t) > 1 and t[0] == t[-1] == '"']
        with self._lock:
            known = {t: self._tokens[t] for t in words if t in self._tokens}
            for term in known:
                self._tokens.move_to_end(term)
        new = [t for t in dict.fromkeys(words) if t not in known]
        if new:
            made = fts.tokens_of(conn, [t[1:-1].replace('""', '"') for t in new])
            known.update(zip(new, made, strict=True))
            with self._lock:
                self._tokens.update(zip(new, made, strict=True))
                while len(self._tokens) > KEPT_MET:
                    self._tokens.popitem(last=False)
        return [known.get(t) for t in terms]

    def get(self, key: Key) -> Head | None:
        """The head of ``key`` (a term, and the filters it was taken over), if kept."""
        with self._lock:
            head = self._heads.get(key)
            if head is not None:
                self._heads.move_to_end(key)
            return head

    def put(self, key: Key, head: Head) -> None:
        """Keep ``head`` for ``key``."""
        with self._lock:
            self._heads[key] = head
            self._heads.move_to_end(key)
            while len(self._heads) > self._most:
                self._heads.popitem(last=False)


def over(conn: sqlite3.Connection, filters: Filters) -> tuple[bool, Filters | None]:
    """Whether heads can serve a top over ``filters``, and the filters they are taken over: None
    (every memory) when ``filters`` leave out only superseded and expired memories; else ``filters``
    with those included (a memory forgotten may give one it superseded back to the filters, and a
    head over more memories still bounds fewer). Not for meta (edited without a rewrite of the
    keyword row) nor a time window (a new one each search), nor filters selecting few memories
    (``fts.listed_through``: the full query reads only theirs)."""
    if filters.meta or filters.since or filters.until:
        return False, None
    whole = replace(filters, include_superseded=True, include_expired=True)
    if whole == replace(Filters(), include_superseded=True, include_expired=True):
        return True, None
    return fts.listed_through(conn, filters) is None, whole


@dataclass(frozen=True)
class State:
    """What the store shows now: its rows, their mean length, its highest id and its rewrites."""

    rows: int
    mean: float
    last: int
    rewrites: int


def state(conn: sqlite3.Connection) -> State:
    """The keyword table's ``State`` (FTS5's averages record, the highest id, ``fts.rewrites``)."""
    rows, columns = fts.averages(conn)
    last = conn.execute("SELECT coalesce(max(id), 0) FROM memories_fts_docsize").fetchone()[0]
    return State(rows, max(sum(columns), 1) / max(rows, 1), int(last), fts.rewrites(conn))


def top(
    conn: sqlite3.Connection,
    heads: Heads,
    terms: Sequence[str],
    held: Sequence[int],
    filters: Filters,
    limit: int,
) -> list[Scored] | None:
    """The BM25 top ``limit`` (memory id, score; best first, ties by id) over ``terms`` (each held
    by ``held`` memories) among the filtered memories, exactly as ``fts.search`` gives it, or None
    when the heads cannot show it is (see the module docstring): the caller then runs the full
    query. A term's head is taken the second time the term is met (``CHEAP_HOLDERS``)."""
    found = top_scoring(conn, heads, terms, held, filters, limit, ())
    return None if found is None else found[0]


def top_scoring(
    conn: sqlite3.Connection,
    heads: Heads,
    terms: Sequence[str],
    held: Sequence[int],
    filters: Filters,
    limit: int,
    scoring: Sequence[int],
) -> tuple[list[Scored], list[Scored]] | None:
    """``top``, its one statement scoring the memories ``scoring`` too: (the top, those of
    ``scoring`` among the filtered matches with their scores, best first), or None. A candidate
    more changes no top: one that would enter it is in it."""
    servable, taken_over = over(conn, filters)
    if not terms or len(terms) > MAX_TERMS or limit > MAX_LIMIT or not servable:
        return None
    now = state(conn)
    size = max(MIN_HEAD, 2 * limit)
    keys = [(term, taken_over) for term in terms]
    kept = [_kept(heads, key, now, size) for key in keys]
    if taken_over is None and None in kept:
        stored = _stored(
            conn, heads, [t for t, head in zip(terms, kept, strict=True) if head is None], now, size
        )
        kept = [head or stored.get(term) for term, head in zip(terms, kept, strict=True)]
    worth = [heads.met(key) or count <= CHEAP_HOLDERS for key, count in zip(keys, held, strict=True)]
    if any(head is None and not ok for head, ok in zip(kept, worth, strict=True)):
        return None  # a term met for the first time: the full query (every term is now met)
    taken = [
        head or _taken(conn, heads, key, count, now, size)
        for head, key, count in zip(kept, keys, held, strict=True)
    ]
    found, also = _candidates_top(conn, terms, taken, filters, limit, scoring)
    if len(found) < limit:
        return None
    floor = found[-1][1]
    for head, count in zip(taken, held, strict=True):
        if bound(head, bm25.idf(now.rows, count), now.mean) >= floor:
            return None
    return found, also


def _kept(heads: Heads, key: Key, now: State, size: int) -> Head | None:
    """The head of ``key`` (a term, over filters or every memory) if kept and still a bound."""
    head = heads.get(key)
    return head if head is not None and usable(head, now, size) else None


def usable(head: Head, now: State, size: int) -> bool:
    """Whether ``head`` still bounds its term's holders now, for a top that needs ``size``."""
    return (
        (len(head.ids) >= size or head.rest == 0.0)
        and 0 <= now.rewrites - head.rewrites <= fts.REWRITES_KEPT
        and now.last - head.last <= STALE_AFTER
        and head.last <= now.last
    )


def _stored(
    conn: sqlite3.Connection, heads: Heads, terms: Sequence[str], now: State, size: int
) -> dict[str, Head]:
    """The stored heads (over every memory) of those of ``terms`` that have one still a bound, cut
    to ``size`` and kept, read in one statement."""
    tokens = dict(zip(terms, heads.tokens(conn, terms), strict=True))
    rows = conn.execute(
        "SELECT term, idf, mean, last, rewrites, ids, shares FROM keyword_heads "
        "WHERE term IN (SELECT value FROM json_each(?))",
        (json.dumps([token for token in tokens.values() if token is not None]),),
    )
    by_token = {str(row[0]): row[1:] for row in rows}
    found = {}
    for term, token in tokens.items():
        if token not in by_token:
            continue
        idf, mean, last, rewrites, ids, shares = by_token[token]
        holders, best = unpacked("q", ids), unpacked("d", shares)
        cut = min(size, len(holders))
        head = Head(holders[:cut], best[cut] if len(best) > cut else 0.0, idf, mean, last, rewrites)
        if usable(head, now, size):
            heads.put((term, None), head)
            found[term] = head
    return found


def _taken(conn: sqlite3.Connection, heads: Heads, key: Key, holders: int, now: State, size: int) -> Head:
    """A new head of ``key`` (its term held by ``holders`` memories), kept."""
    term, filters = key
    joined, where, params = ("", "1", []) if filters is None else fts.conditions(conn, filters, None, "JOIN")
    rows = conn.execute(
        f"SELECT memories_fts.rowid, {SCORE} AS score FROM memories_fts{joined} "
        f"WHERE memories_fts MATCH ? AND {where} ORDER BY score DESC, memories_fts.rowid LIMIT ?",
        [term, *params, size + 1],
    ).fetchall()
    head = Head(
        array("q", (int(r[0]) for r in rows[:size])),
        float(rows[size][1]) if len(rows) > size else 0.0,
        bm25.idf(now.rows, holders),
        now.mean,
        now.last,
        now.rewrites,
    )
    heads.put(key, head)
    return head


def bound(head: Head, idf: float, mean: float) -> float:
    """The most a holder outside ``head`` (and not added since) can score for its term now: its
    share then, scaled by the IDF's change and by the mean length's growth (module docstring)."""
    if head.rest == 0.0:
        return 0.0
    return head.rest / head.idf * idf * max(1.0, mean / head.mean) * (1.0 + MARGIN)


def _candidates_top(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    kept: Sequence[Head],
    filters: Filters,
    limit: int,
    scoring: Sequence[int],
) -> tuple[list[Scored], list[Scored]]:
    """The BM25 top ``limit`` over the whole query among the filtered candidates: holders of two or
    more terms, the heads, the holders added or rewritten in place since the oldest head, and
    ``scoring``; and those of ``scoring`` that are filtered matches, best first."""
    match = " OR ".join(terms)
    parts = [
        "SELECT value FROM json_each(?)",
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid > ?",
        "SELECT memory_id FROM keyword_rewrites WHERE seq > ?",
    ]
    params: list[object] = [
        json.dumps(sorted({*scoring, *(i for head in kept for i in head.ids)})),
        match,
        min(h.last for h in kept),
        min(h.rewrites for h in kept),
    ]
    if len(terms) > 1:
        parts.append(_ROWIDS)
        params.append(_two_or_more(terms))
    joined, where, filtered = fts.conditions(conn, filters, None, "JOIN")
    sql = (
        f"SELECT memories_fts.rowid, {SCORE} AS score FROM memories_fts{joined} "
        f"WHERE memories_fts MATCH ? AND {where} AND +memories_fts.rowid IN ({' UNION ALL '.join(parts)}) "
        "ORDER BY score DESC, memories_fts.rowid LIMIT ?"
    )
    rows = conn.execute(sql, [match, *filtered, *params, -1 if scoring else limit])
    found = [(int(mid), float(score)) for mid, score in rows]
    wanted = set(scoring)
    return found[:limit], [item for item in found if item[0] in wanted]


def _two_or_more(terms: Sequence[str]) -> str:
    """An FTS5 expression selecting the memories that hold two or more of ``terms``."""
    return " OR ".join(f"({terms[i]} AND ({' OR '.join(terms[i + 1 :])}))" for i in range(len(terms) - 1))


def packed(code: str, values: Iterable[float]) -> bytes:
    """``values`` as a little-endian array of ``code`` (int64 "q", float64 "d")."""
    packed = array(code, values)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def unpacked(code: str, data: bytes) -> array[Any]:
    """The array ``packed`` wrote."""
    values = array(code)
    values.frombytes(data)
    if sys.byteorder == "big":
        values.byteswap()
    return values
