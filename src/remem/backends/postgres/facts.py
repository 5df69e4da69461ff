"""The last step of a hybrid pool on PostgreSQL in one statement (``pooling.Facts``): every pooled
memory's turn, the keyword matches' coverage, the cosines of those beyond the vector top (as
``PostgresVectorLane.cosines``) and, when asked, the texts not known yet. The query's term weights
come from the keyword lane's memo of the same transaction (no statement of their own)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from remem.backends.base import Coverage, TurnTime
from remem.backends.pooling import Facts
from remem.backends.postgres import keywords
from remem.backends.postgres.lanes import best_per_memory

if TYPE_CHECKING:
    import psycopg

    from remem.backends.base import PoolRequest
    from remem.backends.pooling import Wanted
    from remem.backends.postgres.session import Session


def facts(
    cursor: psycopg.Cursor[Any],
    s: str,
    session: Session,
    request: PoolRequest,
    wanted: Wanted,
) -> Facts:
    """What ``wanted`` asks (``pooling.Wanted``; coverage as ``keywords.coverage``, texts when the
    request asks for them), in one statement."""
    weighted = keywords.weighted_terms(cursor, s, request.text, session, request.scope)
    covered, params = "0", []
    if weighted.terms:
        covered, params = keywords.COVERED, [keywords.tsqueries(weighted.terms, own=True), weighted.idf]
    cursor.execute(
        f'SELECT m.id, m."user", m.conversation, m.created_at, m.role, '
        f"CASE WHEN m.id = ANY(%s::bigint[]) THEN {covered} END, "
        "CASE WHEN %s AND NOT m.id = ANY(%s::bigint[]) THEN m.text END, "
        "CASE WHEN m.id = ANY(%s::bigint[]) THEN (SELECT max(-(v.embedding <#> %s)) "
        f"FROM {s}.vectors v WHERE v.memory_id = m.id) END "
        f"FROM {s}.memories m WHERE m.id = ANY(%s::bigint[])",
        [
            list(wanted.matches),
            *params,
            request.texts,
            list(wanted.known),
            list(wanted.extra),
            wanted.vector,
            list(wanted.ids),
        ],
    )
    whole = float(sum(weighted.idf))
    turns: dict[int, TurnTime] = {}
    shares: dict[int, float] = {}
    texts: dict[int, str] = {}
    cosines: list[tuple[Any, Any]] = []
    for mid, user, conversation, created_at, role, weight, text, cosine in cursor.fetchall():
        if conversation is not None:
            turns[int(mid)] = TurnTime(user, conversation, created_at, role)
        if weight is not None:
            shares[int(mid)] = keywords.share(weight, whole, request.enough)
        if text is not None:
            texts[int(mid)] = str(text)
        if cosine is not None:
            cosines.append((mid, cosine))
    matches = wanted.matches
    coverage = Coverage({mid: shares.get(mid, 0.0) for mid in matches}, whole) if matches else None
    return Facts(turns, coverage, texts, best_per_memory(cosines))
