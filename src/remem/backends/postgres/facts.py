"""The last step of a hybrid pool on PostgreSQL in one statement (``pooling.Facts``): every pooled
memory's turn, the keyword matches' coverage, the cosines of those beyond the vector top (as
``PostgresVectorLane.cosines``), the BM25 of the vector hits beyond the keyword top (as
``keywords.top`` among them ranks them) and, when asked, the texts not known yet. The query's term
weights come from the keyword lane's memo of the same transaction (no statement of their own)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from remem.backends.base import Coverage, TurnTime
from remem.backends.pooling import Facts
from remem.backends.postgres import keywords
from remem.backends.postgres.lanes import best_per_memory

if TYPE_CHECKING:
    import psycopg

    from remem.backends.base import PoolRequest, Scored
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
    request asks for them), in one statement; the BM25 of the missing memories by ``keywords.top``
    when the query holds a near-zero-IDF term of a big store (``keywords.split``)."""
    weighted = keywords.weighted_terms(cursor, s, request.text, session, request.scope)
    ranked, common = keywords.split(weighted)
    missing, scored = list(wanted.missing), []
    if missing and common is not None:
        scored, missing = _scored(cursor, s, session, request, missing), []
    covered, params = "0", []
    if weighted.terms:
        covered, params = keywords.COVERED, [keywords.tsqueries(weighted.terms, own=True), weighted.idf]
    bm25, bm25_params = keywords.scoring(s, ranked, request.filters)
    cursor.execute(
        f'SELECT m.id, m."user", m.conversation, m.created_at, m.role, '
        f"CASE WHEN m.id = ANY(%s::bigint[]) THEN {covered} END, "
        "CASE WHEN %s AND NOT m.id = ANY(%s::bigint[]) THEN m.text END, "
        "CASE WHEN m.id = ANY(%s::bigint[]) THEN (SELECT max(-(v.embedding <#> %s)) "
        f"FROM {s}.vectors v WHERE v.memory_id = m.id) END, "
        f"CASE WHEN m.id = ANY(%s::bigint[]) THEN {bm25} END "
        f"FROM {s}.memories m WHERE m.id = ANY(%s::bigint[])",
        [
            [*wanted.matches, *missing, *(mid for mid, _ in scored)],
            *params,
            request.texts,
            list(wanted.known),
            list(wanted.extra),
            wanted.vector,
            missing,
            *bm25_params,
            list(wanted.ids),
        ],
    )
    return _read(cursor.fetchall(), request, wanted, float(sum(weighted.idf)), scored)


def _scored(
    cursor: psycopg.Cursor[Any], s: str, session: Session, request: PoolRequest, missing: list[int]
) -> list[Scored]:
    """The BM25 of the ``missing`` memories as ``keywords.top`` among them ranks them."""
    text, filters, scope = request.text, request.filters, request.scope
    return keywords.top(cursor, s, text, filters, len(missing), missing, session, scope)


def _read(
    rows: list[tuple[Any, ...]], request: PoolRequest, wanted: Wanted, whole: float, scored: list[Scored]
) -> Facts:
    """The facts of the statement's rows (``scored``: the missing memories' BM25, if read already)."""
    turns: dict[int, TurnTime] = {}
    shares: dict[int, float] = {}
    texts: dict[int, str] = {}
    cosines: list[tuple[Any, Any]] = []
    found: list[Scored] = []
    for mid, user, conversation, created_at, role, weight, text, cosine, bm25 in rows:
        if conversation is not None:
            turns[int(mid)] = TurnTime(user, conversation, created_at, role)
        if weight is not None:
            shares[int(mid)] = keywords.share(weight, whole, request.enough)
        if text is not None:
            texts[int(mid)] = str(text)
        if cosine is not None:
            cosines.append((mid, cosine))
        if bm25 is not None:
            found.append((int(mid), float(bm25)))
    scored = scored or sorted(found, key=lambda item: (-item[1], item[0]))
    matches = [*wanted.matches, *(mid for mid, _ in scored)]
    coverage = Coverage({mid: shares.get(mid, 0.0) for mid in matches}, whole) if matches else None
    return Facts(turns, coverage, texts, best_per_memory(cosines), scored)
