"""The memories that may hold a query's required phrases, on PostgreSQL: selected by their keyword
terms (the GIN index on the tsvector), for the core to check their texts (the tsvector keeps the
terms, not the words in between)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from remem.backends.analyzer import sure_terms
from remem.backends.postgres import filtering
from remem.backends.postgres.keywords import query_terms, tsqueries

if TYPE_CHECKING:
    from remem.backends.postgres.session import Session
    from remem.types import Filters


def holding(session: Session, s: str, words: Sequence[str], filters: Filters) -> list[tuple[int, str]]:
    """(id, text) of the filtered memories that may hold every one of ``words``
    (``Backend.texts_holding``), in id order: those whose own terms (not their context's) include
    each of the words that surely are terms. One transaction (or the caller's snapshot)."""
    condition, params = filtering.where(filters, s)
    sure = sure_terms(words)
    with session.transaction() as cursor:
        if sure:
            terms = query_terms(cursor, s, " ".join(sure), session)
            condition = f"m.terms @@ %s::tsquery AND {condition}"
            params = [" & ".join(tsqueries(terms, own=True)), *params]
        cursor.execute(f"SELECT m.id, m.text FROM {s}.memories m WHERE {condition} ORDER BY m.id", params)
        return [(int(mid), str(text)) for mid, text in cursor.fetchall()]
