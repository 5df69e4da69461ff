"""The lanes' tops of a pool on PostgreSQL in one statement each (``pooling.Shortcuts``): a lane's
top over the search's filters and its top within the window its time words name, marked by part;
the keyword top's turns with it when the query may name speakers (the query's vector is made
without them), so neither time words nor a name costs a round trip of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from remem.backends.base import Scored, TurnTime
from remem.backends.postgres import keywords
from remem.backends.postgres.lanes import PostgresVectorLane, best_per_memory

if TYPE_CHECKING:
    import psycopg

    from remem.arrays import FloatArray
    from remem.backends.base import PoolRequest
    from remem.backends.pooling import Tops, Turns
    from remem.backends.postgres.session import Session
    from remem.types import Filters


def parts(request: PoolRequest) -> list[Filters]:
    """The filters of each part of a lane's tops: the search's, then the window's if it has one."""
    return [request.filters] if request.window is None else [request.filters, request.window]


def united(statements: Sequence[tuple[str, list[Any]]]) -> tuple[str, list[Any]]:
    """Statements of (id, score) rows as one of (part, id, score) rows (unordered: order them by
    part, score descending, id, as each statement orders its own)."""
    union = " UNION ALL ".join(
        f"SELECT {n:d} AS part, r.id, r.score FROM ({statement}) AS r"
        for n, (statement, _) in enumerate(statements)
    )
    return union, [param for _, part in statements for param in part]


def split_parts(rows: Sequence[tuple[Any, ...]], count: int) -> Tops:
    """The (id, score) lists of ``count`` parts from (part, id, score, ...) rows (part -1: none's)."""
    found: list[list[Scored]] = [[] for _ in range(count)]
    for part, mid, score, *_ in rows:
        if part >= 0:
            found[int(part)].append((int(mid), float(score)))
    return found[0], found[1] if count > 1 else None


def keyword_tops(
    cursor: psycopg.Cursor[Any],
    s: str,
    session: Session,
    request: PoolRequest,
    among: Sequence[int] | None,
    settings: tuple[str, list[Any]] | None = None,
) -> tuple[Tops, Turns | None]:
    """The keyword lane's ``Tops`` of ``request.depth`` (only ``among`` if given) as ``keywords.top``
    ranks them, and their turns when the request may name speakers, in one statement that also runs
    the expressions of ``settings`` (the vector lane's walk's: ``walk_settings``); by ``keywords.top``
    (and no turns) when the query holds a near-zero-IDF term of a big store or none."""
    filters = parts(request)
    scored, common = keywords.split(keywords.weighted_terms(cursor, s, request.text, session, request.scope))
    if common is not None or not scored.terms or (among is not None and not among):
        if settings is not None:
            cursor.execute(f"SELECT {settings[0]}", settings[1])
        text, depth, scope = request.text, request.depth, request.scope
        found = [keywords.top(cursor, s, text, f, depth, among, session, scope) for f in filters]
        return (found[0], found[1] if len(found) > 1 else None), None
    union, params = united([keywords.ranking(s, scored, f, request.depth, among) for f in filters])
    if settings is not None:  # a branch of its own: always run (set_config is volatile: never left out)
        union += f" UNION ALL SELECT -1, 0::bigint, 0::float8 FROM (SELECT {settings[0]}) AS c"
        params += settings[1]
    turn = ', m."user", m.conversation, m.created_at, m.role' if request.speakers else ""
    cursor.execute(
        f"SELECT x.part, x.id, x.score{turn} FROM ({union}) AS x "
        f"{f'LEFT JOIN {s}.memories m ON m.id = x.id ' if turn else ''}ORDER BY x.part, x.score DESC, x.id",
        params,
    )
    rows = cursor.fetchall()
    turns = (
        {int(row[1]): TurnTime(*row[3:]) for row in rows if row[0] >= 0 and row[4] is not None}
        if turn
        else None
    )
    return split_parts(rows, len(filters)), turns


def vector_tops(lane: PostgresVectorLane, request: PoolRequest, vector: FloatArray) -> Tops:
    """The vector lane's ``Tops`` of ``request.depth``, as ``PostgresVectorLane.top`` finds each: in
    one statement where the window selects few enough vectors to score exactly (the search's filters
    too, or its walk of the graph; a walk that fills too little is walked again by ``top``)."""
    filters, depth = parts(request), request.depth
    with lane.session.transaction() as cursor:
        if len(filters) == 1 or not lane.exact_enough(cursor, filters[1]):
            each = [lane.top(vector, depth, f) for f in filters]
            return each[0], each[1] if len(each) > 1 else None
        exact = lane.exact_enough(cursor, filters[0])
        first = lane.exact_statement(vector, depth, filters[0]) if exact else None
        first = first or lane.walk_statement(cursor, vector, depth, filters[0])
        union, params = united([first, lane.exact_statement(vector, depth, filters[1])])
        cursor.execute(
            f"SELECT x.part, x.id, x.score FROM ({union}) AS x ORDER BY x.part, x.score DESC, x.id", params
        )
        found, inside = split_parts(cursor.fetchall(), 2)
        if exact:
            return found, inside
        best = best_per_memory(found)  # window rows of the walk: each memory's best
        return (best[:depth] if len(best) >= depth else lane.top(vector, depth, filters[0])), inside
