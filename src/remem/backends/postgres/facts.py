"""The last step of a hybrid pool on PostgreSQL in one statement (``pooling.Facts``): every pooled
memory's turn, the keyword matches' coverage and, when asked, the texts not known yet. The query's
term weights come from the keyword lane's memo of the same transaction (no statement of their own)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from remem.backends.base import Coverage, TurnTime
from remem.backends.pooling import Facts
from remem.backends.postgres import keywords

if TYPE_CHECKING:
    import psycopg

    from remem.backends.pooling import PoolRequest
    from remem.backends.postgres.session import Session


def facts(
    cursor: psycopg.Cursor[Any],
    s: str,
    session: Session,
    request: PoolRequest,
    ids: Sequence[int],
    matches: Sequence[int],
    known: Collection[int],
) -> Facts:
    """The turns of ``ids``, the coverage of ``matches`` (as ``keywords.coverage``) and (when the
    request asks for texts) the texts of those of ``ids`` not ``known``, in one statement."""
    weighted = keywords.weighted_terms(cursor, s, request.text, session, request.scope)
    covered, params = "0", []
    if weighted.terms:
        covered, params = keywords.COVERED, [keywords.tsqueries(weighted.terms, own=True), weighted.idf]
    cursor.execute(
        f'SELECT m.id, m."user", m.conversation, m.created_at, m.role, '
        f"CASE WHEN m.id = ANY(%s::bigint[]) THEN {covered} END, "
        "CASE WHEN %s AND NOT m.id = ANY(%s::bigint[]) THEN m.text END "
        f"FROM {s}.memories m WHERE m.id = ANY(%s::bigint[])",
        [list(matches), *params, request.texts, list(known), list(ids)],
    )
    whole = float(sum(weighted.idf))
    turns: dict[int, TurnTime] = {}
    shares: dict[int, float] = {}
    texts: dict[int, str] = {}
    for mid, user, conversation, created_at, role, weight, text in cursor.fetchall():
        if conversation is not None:
            turns[int(mid)] = TurnTime(user, conversation, created_at, role)
        if weight is not None:
            shares[int(mid)] = keywords.share(weight, whole, request.enough)
        if text is not None:
            texts[int(mid)] = str(text)
    coverage = Coverage({mid: shares.get(mid, 0.0) for mid in matches}, whole) if matches else None
    return Facts(turns, coverage, texts)
