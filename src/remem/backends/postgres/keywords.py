"""The keyword lane on PostgreSQL: the local store's analyzer, its terms in an indexed tsvector.

A memory's terms (``remem.backends.analyzer``: identifiers whole and split, no stop words, CJK
bigrams) are stemmed by the server's English Snowball stemmer and stored with their positions as a
tsvector with a GIN index. A query becomes one tsquery per distinct term (hashes as prefixes).
Matching memories are scored by BM25 in SQL (Lucene's IDF over the whole store, or over the
memories of a search's scope, k1 1.2, b 0.75; every term's count in one statement):
first cheaply with every term frequency taken as 1, then the best ``POOL`` (at least 3 k) with their
real term frequencies. Unlike FTS5, the stemmer is Snowball's, not Porter's, and IDF is Lucene's.
In stores of 20,000 memories and more, N and the mean length are estimates (planner statistics, a
fixed page sample): exact counts would cost a scan. PostgreSQL limits a lexeme to 2,046 bytes
and a tsvector to 1 MB: a longer term is indexed (and queried) as its digest, and a memory whose
terms would overflow its tsvector keeps the first that fit (``indexed``).
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from remem.backends import analyzer, bounds
from remem.backends.analyzer import CONTEXT_WEIGHT, looks_like_hash
from remem.backends.base import Coverage, Scored
from remem.backends.postgres import filtering
from remem.backends.postgres.rows import one_row, one_value

if TYPE_CHECKING:
    import psycopg

    from remem.backends.postgres.session import Session
    from remem.types import Filters

K1 = 1.2
B = 0.75
#: Matching memories are first ranked by a cheap score (BM25 with every frequency taken as 1: an
#: index probe per term), then this many of the best are scored with their term frequencies.
POOL = 200
_PRESCORE = f"""((SELECT sum(q.w * CASE WHEN m.terms @@ q.own THEN 1 ELSE {CONTEXT_WEIGHT} END)
    FROM unnest(%s::tsquery[], %s::tsquery[], %s::float8[]) AS q(t, own, w) WHERE m.terms @@ q.t)
    / (1 + {K1} * ({1 - B} + {B} * m.term_count / %s)))"""
#: BM25 of memory ``m`` in SQL: for each query term (lexeme, prefix?, IDF) that the memory holds,
#: its frequency (its positions; one in the context, weight C, counts CONTEXT_WEIGHT) saturated by
#: k1 and normalised by the memory's own length against the mean. Parameters: mean length, lexemes,
#: prefix flags, IDF weights. Both sums are in a fixed order: a float sum in the order a plan
#: happens to give its rows differed in its last bit between the generic and custom plans of one
#: statement (a search's scores then depended on which statements ran before it).
_BM25 = f"""(SELECT sum(x.w * x.tf * {K1 + 1} / (x.tf + {K1} * ({1 - B} + {B} * m.term_count / %s))
                ORDER BY x.lx COLLATE "C")
    FROM (SELECT q.lx, q.w, sum(coalesce((SELECT sum(CASE WHEN l = 'C' THEN {CONTEXT_WEIGHT} ELSE 1 END)
                                          FROM unnest(u.weights) AS l), 1)
                                ORDER BY u.lexeme COLLATE "C") AS tf
          FROM unnest(%s::text[], %s::bool[], %s::float8[]) AS q(lx, prefix, w)
          JOIN unnest(m.terms) AS u(lexeme, positions, weights)
            ON u.lexeme = q.lx OR (q.prefix AND starts_with(u.lexeme, q.lx))
          GROUP BY q.lx, q.w) AS x)"""


#: The longest lexeme a tsvector or tsquery takes (bytes of UTF-8).
MAX_LEXEME_BYTES = 2046
#: The most lexemes and positions one tsvector holds (bytes); a lexeme keeps at most 256 positions.
MAX_TSVECTOR_BYTES = (1 << 20) - 1
_MAX_POSITIONS = 256


def indexable(term: str) -> str:
    """The term as the server can index it: one longer than a lexeme may be (a pasted token)
    becomes ``~`` and its SHA-256 (the analyzer never makes a ``~``), in memories and queries alike,
    so the whole term still finds its memory."""
    if len(term) * 4 <= MAX_LEXEME_BYTES:  # at most 4 bytes a character: no need to encode
        return term
    raw = term.encode()
    return term if len(raw) <= MAX_LEXEME_BYTES else "~" + hashlib.sha256(raw).hexdigest()


def indexed(own: Sequence[str], context: Sequence[str]) -> tuple[list[str], list[str]]:
    """A memory's own and context terms as its tsvector can hold them: each ``indexable``; when
    all of them would overflow a tsvector, the distinct terms that fit (first come, own terms
    first), each with all its occurrences. An upper bound of the size (before stemming, which
    only merges and shortens) is checked first, so ordinary memories cost one pass."""
    own, context = [indexable(t) for t in own], [indexable(t) for t in context]
    every = [*own, *context]
    if sum(len(t) for t in every) * 4 + 6 * len(every) <= MAX_TSVECTOR_BYTES:
        return own, context
    counts, used = Counter(every), 0
    kept: set[str] = set()
    for term in counts:  # in order of first occurrence
        size = len(term.encode())
        cost = size + size % 2 + 2 + 2 * min(counts[term], _MAX_POSITIONS)  # lexeme, pad, positions
        if used + cost <= MAX_TSVECTOR_BYTES:
            kept.add(term)
            used += cost
    return [t for t in own if t in kept], [t for t in context if t in kept]


def _tsquery(lexeme: str, prefix: bool, own: bool = False) -> str:
    """One lexeme as tsquery input: quoted (``'`` doubled, ``\\`` escaped), ``:*`` for a prefix;
    ``own``: only in the memory's own terms (weight D), not its context."""
    label = ":*" if prefix else ""
    if own:
        label = (label or ":") + "D"
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'" + label


#: A query term: its lexeme (stemmed as memories are) and whether it matches as a prefix (a hash).
Term = tuple[str, bool]


def query_terms(cursor: psycopg.Cursor[Any], s: str, text: str, session: Session | None = None) -> list[Term]:
    """The query's distinct terms ([] if none; at most ``analyzer.MAX_QUERY_TERMS``). Stemmed by the
    server once per ``session`` (``Session.lasting``: the stemmer reads no row), so a search of
    words stemmed before spends no round trip on them."""
    terms = tuple(dict.fromkeys(indexable(term) for term in analyzer.query_terms(text)))
    if not terms:
        return []

    def stemmed() -> list[Term]:
        cursor.execute(f"SELECT {s}.lexemes(%s::text[])", (list(terms),))
        lexemes = one_value(cursor)
        return list(dict.fromkeys((lx, looks_like_hash(t)) for t, lx in zip(terms, lexemes, strict=True)))

    return list(stemmed() if session is None else session.lasting(("lexemes", s, terms), stemmed))


def tsqueries(terms: Sequence[Term], own: bool = False) -> list[str]:
    """Each term as tsquery input (``own``: matching only the memory's own terms, not its context)."""
    return [_tsquery(lexeme, prefix, own) for lexeme, prefix in terms]


@dataclass(frozen=True)
class Weighted:
    """A query's terms, how many memories hold each, their IDF weights, the mean memory length."""

    terms: list[Term]
    holders: list[int]
    idf: list[float]
    mean: float

    def part(self, which: Sequence[int]) -> Weighted:
        """The same of the terms at places ``which`` only."""
        return Weighted(
            [self.terms[i] for i in which],
            [self.holders[i] for i in which],
            [self.idf[i] for i in which],
            self.mean,
        )


def weighted_terms(
    cursor: psycopg.Cursor[Any], s: str, text: str, session: Session, scope: Filters | None = None
) -> Weighted:
    """The query's terms with their counts and weights (over ``scope``'s memories if given), computed
    once per transaction (the session's ``memo``: a hybrid search asks three times)."""
    key, memo = ("weighted_terms", s, text, scope), session.memo
    if key not in memo:
        terms = query_terms(cursor, s, text, session)
        memo[key] = _weights(cursor, s, terms, session, scope) if terms else Weighted([], [], [], 1.0)
    return memo[key]  # type: ignore[no-any-return]


#: From this many memories on, the store's size and mean length come from the planner's statistics
#: and a fixed page sample (a full count costs ≈30 ms per 100k memories; BM25 needs neither exactly).
ESTIMATE_FROM = 20_000


def _size_and_mean_length(cursor: psycopg.Cursor[Any], s: str, scope: Filters | None) -> tuple[int, float]:
    """The number of memories and their mean term count: exact for small stores, estimated (the
    table's ``reltuples``, a repeatable 2 % page sample) for large ones; always exact for the
    memories of ``scope`` if given (an estimate would be the whole store's)."""
    if scope is not None:
        condition, params = filtering.where(scope, s)
        cursor.execute(
            f"SELECT count(*), coalesce(avg(term_count), 1) FROM {s}.memories m WHERE {condition}", params
        )
        counted, average = one_row(cursor)
        return int(counted), float(average)
    cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass(%s)", (f"{s}.memories",))
    estimate = int(one_value(cursor))
    if estimate >= ESTIMATE_FROM:
        cursor.execute(f"SELECT avg(term_count) FROM {s}.memories TABLESAMPLE SYSTEM (2) REPEATABLE (7)")
        mean = one_value(cursor)
        if mean is not None:
            return estimate, float(mean)
    cursor.execute(f"SELECT count(*), coalesce(avg(term_count), 1) FROM {s}.memories")
    total, mean = one_row(cursor)
    return int(total), float(mean)


def _weights(
    cursor: psycopg.Cursor[Any], s: str, terms: list[Term], session: Session, scope: Filters | None
) -> Weighted:
    """Each term's count and IDF, ln(1 + (N - n + 0.5) / (n + 0.5)) over the whole store (``scope``'s
    memories if given), and the mean length. The counts, N and the mean length are counted again
    only when the store may have changed (``Session.unchanged``): a term every one of 200,000
    memories holds took ≈100 ms to count."""
    queries = tsqueries(terms)
    matching = session.unchanged(
        cursor, ("holders", s, scope, *queries), functools.partial(_holders, cursor, s, queries, scope)
    )
    total, mean = session.unchanged(
        cursor, ("size_and_mean_length", s, scope), lambda: _size_and_mean_length(cursor, s, scope)
    )
    total = max(total, *matching)
    idf = [math.log(1 + (total - n + 0.5) / (n + 0.5)) for n in matching]
    return Weighted(terms, matching, idf, max(mean, 1.0))


def _holders(cursor: psycopg.Cursor[Any], s: str, queries: list[str], scope: Filters | None) -> list[int]:
    """How many memories (of ``scope``'s, if given) hold each term of ``queries`` (tsquery input), in
    one statement: a count served by the GIN index per term."""
    condition, params = ("true", []) if scope is None else filtering.where(scope, s)
    cursor.execute(
        f"SELECT (SELECT count(*) FROM {s}.memories m WHERE m.terms @@ q.t AND {condition}) "
        "FROM unnest(%s::tsquery[]) WITH ORDINALITY AS q(t, place) ORDER BY q.place",
        [*params, queries],
    )
    return [int(row[0]) for row in cursor.fetchall()]


def top(
    cursor: psycopg.Cursor[Any],
    s: str,
    text: str,
    filters: Filters,
    k: int,
    among: Sequence[int] | None,
    session: Session,
    scope: Filters | None = None,
) -> list[Scored]:
    """Top ``k`` (memory id, score; higher is better) among the filtered memories (only ``among``
    if given), best first; [] when the text has no searchable terms. Near-zero-IDF terms of a big
    store are left out of the ranking query (``remem.backends.bounds``). With ``scope`` (holding
    every filtered memory), its memories' statistics alone weigh the terms."""
    if among is not None and not among:
        return []
    scored, common = split(weighted_terms(cursor, s, text, session, scope))
    found = _ranked(cursor, s, scored, filters, k, among) if scored.terms else []
    if (
        common is not None and len(found) < k
    ):  # every holder of a scored term is in: the rest hold only common terms
        found += _newest(cursor, s, common, filters, k - len(found), among, [m for m, _ in found])
    return found


def split(weighted: Weighted) -> tuple[Weighted, Weighted | None]:
    """The query's terms a ranking scores, and its near-zero-IDF terms of a big store
    (``remem.backends.bounds``; None when there are none), which only rank the memories holding
    nothing else."""
    common = [i for i, idf in enumerate(weighted.idf) if bounds.near_zero(idf, weighted.holders[i])]
    scored = weighted.part([i for i in range(len(weighted.terms)) if i not in common])
    return scored, weighted.part(common) if common else None


def ranking(
    s: str, weighted: Weighted, filters: Filters, k: int, among: Sequence[int] | None
) -> tuple[str, list[Any]]:
    """The statement (and its parameters) of ``_ranked``: (id, score) rows, best first."""
    queries = tsqueries(weighted.terms)
    condition, params = filtering.where(filters, s)
    if among is not None:
        condition += " AND m.id = ANY(%s::bigint[])"
        params.append(list(among))
    lexemes, prefixes = [lexeme for lexeme, _ in weighted.terms], [prefix for _, prefix in weighted.terms]
    statement = (
        f"WITH pool AS (SELECT m.id, m.terms, m.term_count FROM {s}.memories m "
        f"WHERE m.terms @@ %s::tsquery AND {condition} ORDER BY {_PRESCORE} DESC, m.id LIMIT %s) "
        f"SELECT m.id, {_BM25} AS score FROM pool m ORDER BY score DESC, m.id LIMIT %s"
    )
    own, idf, mean = tsqueries(weighted.terms, own=True), weighted.idf, weighted.mean
    pool = max(POOL, 3 * k)
    return statement, [
        " | ".join(queries),
        *params,
        queries,
        own,
        idf,
        mean,
        pool,
        mean,
        lexemes,
        prefixes,
        idf,
        k,
    ]


def _ranked(
    cursor: psycopg.Cursor[Any],
    s: str,
    weighted: Weighted,
    filters: Filters,
    k: int,
    among: Sequence[int] | None,
) -> list[Scored]:
    """Top ``k`` by BM25 over the weighted terms: the best ``POOL`` (at least 3 k) of their holders by
    the cheap score, then those by BM25."""
    cursor.execute(*ranking(s, weighted, filters, k, among))
    return [(int(mid), float(score)) for mid, score in cursor.fetchall()]


def scoring(s: str, weighted: Weighted, filters: Filters) -> tuple[str, list[Any]]:
    """An expression (and its parameters) for memory ``m``'s BM25 over the weighted terms when it is
    filtered and holds one of them (else NULL): the score ``_ranked`` gives it."""
    if not weighted.terms:
        return "NULL", []
    condition, params = filtering.where(filters, s)
    lexemes, prefixes = [lexeme for lexeme, _ in weighted.terms], [prefix for _, prefix in weighted.terms]
    return (
        f"CASE WHEN m.terms @@ %s::tsquery AND {condition} THEN {_BM25} END",
        [" | ".join(tsqueries(weighted.terms)), *params, weighted.mean, lexemes, prefixes, weighted.idf],
    )


def _newest(
    cursor: psycopg.Cursor[Any],
    s: str,
    common: Weighted,
    filters: Filters,
    k: int,
    among: Sequence[int] | None,
    skip: list[int],
) -> list[Scored]:
    """Top ``k`` by BM25 over the (near-zero-IDF) terms of ``common`` among the newest ``bounds.WINDOW``
    filtered memories holding any of them (those in ``among`` if given), leaving out ``skip``. The
    window does not depend on ``among``: a memory has the same score in every call."""
    condition, params = filtering.where(filters, s)
    wanted, extra = ("m.id = ANY(%s::bigint[])", [list(among)]) if among is not None else ("TRUE", [])
    lexemes, prefixes = [lexeme for lexeme, _ in common.terms], [prefix for _, prefix in common.terms]
    cursor.execute(
        f"WITH recent AS (SELECT m.id, m.terms, m.term_count FROM {s}.memories m "
        f"WHERE m.terms @@ %s::tsquery AND {condition} ORDER BY m.id DESC LIMIT %s) "
        f"SELECT m.id, {_BM25} AS score FROM recent m WHERE m.id <> ALL(%s::bigint[]) AND {wanted} "
        "ORDER BY score DESC, m.id LIMIT %s",
        [
            " | ".join(tsqueries(common.terms)),
            *params,
            bounds.WINDOW,
            common.mean,
            lexemes,
            prefixes,
            common.idf,
            skip,
            *extra,
            k,
        ],
    )
    return [(int(mid), float(score)) for mid, score in cursor.fetchall()]


def coverage(
    cursor: psycopg.Cursor[Any],
    s: str,
    text: str,
    ids: Sequence[int],
    enough: float,
    session: Session,
    scope: Filters | None = None,
) -> Coverage:
    """For each id, the share (0..1) of the query's IDF weight (over ``scope``'s memories if given)
    that the memory's own terms match, capped at ``enough``; and the query's whole weight
    (``Backend.keyword_coverage``)."""
    weighted = weighted_terms(cursor, s, text, session, scope)
    terms, idf = weighted.terms, weighted.idf
    if not terms or not ids:
        return Coverage(dict.fromkeys(ids, 0.0), float(sum(idf)))
    cursor.execute(
        f"SELECT m.id, {COVERED} FROM {s}.memories m WHERE m.id = ANY(%s::bigint[])",
        (tsqueries(terms, own=True), idf, list(ids)),
    )
    whole = float(sum(idf))
    found = {int(mid): share(weight, whole, enough) for mid, weight in cursor.fetchall()}
    return Coverage({mid: found.get(mid, 0.0) for mid in ids}, whole)


#: The IDF weight of the query's terms that memory ``m``'s own terms match. Parameters: the terms
#: as tsqueries of own terms (``tsqueries(terms, own=True)``), their IDF weights.
COVERED = (
    "(SELECT coalesce(sum(q.w), 0) FROM unnest(%s::tsquery[], %s::float8[]) AS q(t, w) WHERE m.terms @@ q.t)"
)


def share(weight: Any, whole: float, enough: float) -> float:
    """A memory's coverage: the ``weight`` its terms match (``COVERED``) as a share of the query's
    ``whole`` weight, capped at ``enough``."""
    return min(float(weight) / (whole or 1.0), enough)
