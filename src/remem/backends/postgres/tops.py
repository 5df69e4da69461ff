"""The lanes' tops of a pool on PostgreSQL in one statement each (``pooling.Shortcuts``): a lane's
top over the search's filters and its top within the window its time words name, marked by part;
the keyword top's turns with it when the query may name speakers (the query's vector is made
without them), so neither time words nor a name costs a round trip of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from remem.backends.base import Scored, TurnTime
from remem.backends.postgres import keywords
from remem.backends.postgres.lanes import PostgresVectorLane

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
    """The (id, score) lists of ``count`` parts from (part, id, score, ...) rows."""
    found: list[list[Scored]] = [[] for _ in range(count)]
    for part, mid, score, *_ in rows:
        found[int(part)].append((int(mid), float(score)))
    return found[0], found[1] if count > 1 else None


def keyword_tops(
    cursor: psycopg.Cursor[Any],
    s: str,
    session: Session,
    request: PoolRequest,
    among: Sequence[int] | None,
) -> tuple[Tops, Turns | None]:
    """The keyword lane's ``Tops`` of ``request.depth`` (only ``among`` if given) as ``keywords.top``
    ranks them, and their turns when the request may name speakers, in one statement; by
    ``keywords.top`` (and no turns) when the query holds a near-zero-IDF term of a big store or none."""
    filters = parts(request)
    scored, common = keywords.split(keywords.weighted_terms(cursor, s, request.text, session, request.scope))
    if common is not None or not scored.terms or (among is not None and not among):
        text, depth, scope = request.text, request.depth, request.scope
        found = [keywords.top(cursor, s, text, f, depth, among, session, scope) for f in filters]
        return (found[0], found[1] if len(found) > 1 else None), None
    union, params = united([keywords.ranking(s, scored, f, request.depth, among) for f in filters])
    turn = ', m."user", m.conversation, m.created_at, m.role' if request.speakers else ""
    cursor.execute(
        f"SELECT x.part, x.id, x.score{turn} FROM ({union}) AS x "
        f"{f'JOIN {s}.memories m ON m.id = x.id ' if turn else ''}ORDER BY x.part, x.score DESC, x.id",
        params,
    )
    rows = cursor.fetchall()
    turns = {int(row[1]): TurnTime(*row[3:]) for row in rows if row[4] is not None} if turn else None
    return split_parts(rows, len(filters)), turns


def vector_tops(lane: PostgresVectorLane, request: PoolRequest, vector: FloatArray) -> Tops:
    """The vector lane's ``Tops`` of ``request.depth``, as ``PostgresVectorLane.top`` finds each: in
    one statement when the search's filters select few enough vectors to score exactly (then so
    does the window, which they hold)."""
    filters, depth = parts(request), request.depth
    with lane.session.transaction() as cursor:
        if len(filters) == 1 or not lane.exact_enough(cursor, filters[0]):
            found = [lane.top(vector, depth, f) for f in filters]
            return found[0], found[1] if len(found) > 1 else None
        union, params = united([lane.exact_statement(vector, depth, f) for f in filters])
        cursor.execute(
            f"SELECT x.part, x.id, x.score FROM ({union}) AS x ORDER BY x.part, x.score DESC, x.id", params
        )
        return split_parts(cursor.fetchall(), len(filters))
