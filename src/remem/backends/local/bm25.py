"""FTS5's BM25, computed in Python for memories that hold only near-zero-IDF terms, among the newest
``bounds.WINDOW`` of them (``keywords``; scoring every holder of a term each memory holds: 650 ms at 1M).

``score`` is ``bm25()`` of SQLite's FTS5 (``fts5_aux.c``: k1 1.2, b 0.75, a column weight for each
instance, the row's length in tokens against the mean, IDF ln((N - n + 0.5) / (n + 0.5)) and 1e-6
where that is not positive) with the same arithmetic in the same order, so it gives the same double:
a test checks it against ``bm25()`` itself. A row's instances of each term come from ``highlight()``
(one mark per instance, per column) and its length from the table's ``docsize`` record.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence

from remem.backends import bounds
from remem.backends.analyzer import CONTEXT_WEIGHT
from remem.backends.base import Scored
from remem.backends.local import fts
from remem.types import Filters

K1 = 1.2
B = 0.75
#: FTS5's IDF of a term that at least half the rows hold.
FLOOR_IDF = 1e-6
_MARK = "\x01"  # never in a keyword table's text: the analyzer keeps letters, digits and ._-/:@+#


def idf(rows: int, holders: int) -> float:
    """FTS5's IDF of a term that ``holders`` of ``rows`` rows hold."""
    value = math.log((rows - holders + 0.5) / (holders + 0.5))
    return value if value > 0.0 else FLOOR_IDF


def score(instances: Sequence[tuple[int, int]], idfs: Sequence[float], size: int, mean: float) -> float:
    """FTS5's ``bm25(memories_fts, 1.0, CONTEXT_WEIGHT)``, negated (higher is better), of a row of
    ``size`` tokens holding each phrase ``instances`` times (own column, context column), in the
    query's phrase order; ``mean`` is the table's tokens per row."""
    total = 0.0
    for (own, context), weight in zip(instances, idfs, strict=True):
        freq = 0.0
        for _ in range(own):  # FTS5 adds each instance's column weight, own column first
            freq += 1.0
        for _ in range(context):
            freq += CONTEXT_WEIGHT
        total += weight * ((freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * size / mean)))
    return total


def newest(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    filters: Filters,
    limit: int,
    among: Sequence[int] | None,
    skip: set[int],
    mean: float | None = None,
) -> list[Scored]:
    """The BM25 top ``limit`` (memory id, score) over ``terms`` (all near-zero-IDF) among the newest
    ``bounds.WINDOW`` filtered memories holding any of them (those of them in ``among`` if given), leaving out
    ``skip``. The window does not depend on ``among``: a memory has the same score in every call.
    ``mean``: the tokens per row BM25 counts with (default: the whole table's)."""
    wanted = None if among is None else set(among)
    ids = [
        mid
        for mid in _newest_ids(conn, " OR ".join(terms), filters)
        if mid not in skip and (wanted is None or mid in wanted)
    ]
    return scored(conn, terms, ids, [FLOOR_IDF] * len(terms), mean, limit)


def scored(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    ids: list[int],
    idfs: Sequence[float],
    mean: float | None,
    limit: int,
    held: Sequence[int] | None = None,
) -> list[Scored]:
    """The BM25 top ``limit`` (memory id, score; best first, ties by id) of the memories ``ids``
    (each holding some of ``terms``) with these IDFs and ``mean`` tokens per row (default: the
    whole table's), as ``bm25()`` would score them with those statistics. With ``held`` (how many
    rows of the whole table hold each term), the instances come from ``counted``, else from
    ``highlight()`` (``instances``)."""
    if not ids:
        return []
    rows, columns = fts.averages(conn)
    table_mean = max(sum(columns), 1) / max(rows, 1)
    if held is None:
        context = len(columns) > 1 and columns[1] > 0  # no memory has a context: no instance there
        per_term = [instances(conn, term, ids, context) for term in terms]
        sizes = per_term[0][1] if len(terms) == 1 else _sizes(conn, ids)
    else:
        weights = [idf(rows, n) for n in held]
        per_term = [counted(conn, term, ids, w, table_mean) for term, w in zip(terms, weights, strict=True)]
        sizes = {mid: size for _, known in per_term for mid, size in known.items()}  # each holds a term
    found = []
    for mid, size in sizes.items():
        occurrences = [known.get(mid, (0, 0)) for known, _ in per_term]
        found.append((mid, score(occurrences, idfs, size, table_mean if mean is None else mean)))
    return sorted(found, key=lambda pair: (-pair[1], pair[0]))[:limit]


def _newest_ids(conn: sqlite3.Connection, match: str, filters: Filters) -> list[int]:
    """The ids of the newest ``bounds.WINDOW`` filtered memories that ``match`` selects, newest first."""
    joined, where, params = fts.conditions(conn, filters, None, "JOIN")
    rows = conn.execute(
        f"SELECT memories_fts.rowid FROM memories_fts{joined} WHERE memories_fts MATCH ? AND {where} "
        "ORDER BY memories_fts.rowid DESC LIMIT ?",
        [match, *params, bounds.WINDOW],
    )
    return [int(r[0]) for r in rows]


def instances(
    conn: sqlite3.Connection, term: str, ids: list[int], context: bool
) -> tuple[dict[int, tuple[int, int]], dict[int, int]]:
    """For those of ``ids`` holding ``term``: its instances in the own and (if ``context``) the
    context column, read from ``highlight()`` over the doclist from the smallest id on; and their
    lengths in tokens, all columns (FTS5's ``docsize`` record: a varint per column)."""
    marked = f"highlight(memories_fts, 1, '{_MARK}', '')" if context else "''"
    rows = conn.execute(
        f"SELECT f.rowid, highlight(memories_fts, 0, '{_MARK}', ''), {marked}, d.sz "
        "FROM memories_fts f JOIN memories_fts_docsize d ON d.id = f.rowid "
        "WHERE memories_fts MATCH ? AND f.rowid >= ? AND +f.rowid IN (SELECT value FROM json_each(?))",
        (term, min(ids), json.dumps(ids)),
    )
    found, sizes = {}, {}
    for mid, own, other, size in rows:
        found[int(mid)] = ((own or "").count(_MARK), (other or "").count(_MARK))
        sizes[int(mid)] = fts.tokens(bytes(size))
    return found, sizes


def counted(
    conn: sqlite3.Connection, term: str, ids: list[int], weight: float, mean: float
) -> tuple[dict[int, tuple[int, int]], dict[int, int]]:
    """``instances``, read back from ``bm25()`` itself (≈5 times cheaper than ``highlight()``): of a
    single term with one column weighted 1 and the other 0 it is weight × f × (k1 + 1) / (f + K),
    K = k1 × (1 - b + b × length / ``mean``), so the column's instances are f = score × K / (weight ×
    (k1 + 1) - score), rounded. ``weight``: the term's IDF over the whole table (``idf``); ``mean``:
    the table's tokens per row, as FTS5 counts them."""
    rows = conn.execute(
        "SELECT f.rowid, -bm25(memories_fts, 1.0, 0.0), -bm25(memories_fts, 0.0, 1.0), d.sz "
        "FROM memories_fts f JOIN memories_fts_docsize d ON d.id = f.rowid "
        "WHERE memories_fts MATCH ? AND f.rowid >= ? AND +f.rowid IN (SELECT value FROM json_each(?))",
        (term, min(ids), json.dumps(ids)),
    )
    found, sizes = {}, {}
    top = weight * (K1 + 1.0)
    for mid, own, other, blob in rows:
        size = fts.tokens(bytes(blob))
        saturation = K1 * (1 - B + B * size / mean)
        found[int(mid)] = (_frequency(own, top, saturation), _frequency(other, top, saturation))
        sizes[int(mid)] = size
    return found, sizes


def _frequency(score: float, top: float, saturation: float) -> int:
    """The frequency f that one column's BM25 ``score``, weight × f × (k1 + 1) / (f + K), stands for."""
    return round(score * saturation / (top - score)) if score > 0.0 else 0


def _sizes(conn: sqlite3.Connection, ids: list[int]) -> dict[int, int]:
    """Each row's length in tokens, all columns (FTS5's ``docsize`` record: a varint per column)."""
    rows = conn.execute(
        "SELECT id, sz FROM memories_fts_docsize WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(ids),),
    )
    return {int(mid): fts.tokens(bytes(blob)) for mid, blob in rows}
