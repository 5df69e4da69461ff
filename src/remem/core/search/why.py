"""Why a search found what it found: why nothing (``nothing``), and a note when a query that looks
like an identifier found only memories near it by meaning (``identifier_notes``).

Both ask the back-end only in those cases: an empty result, or an identifier none of the hits
holds (then one keyword look-up per such identifier, of at most one memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from remem.core.search import phrases
from remem.reports import Nothing
from remem.types import Filters, Hit, SearchMode

if TYPE_CHECKING:
    from remem.backends.base import Backend
    from remem.core.search.query import Query


def nothing(backend: Backend, query: Query, filters: Filters, mode: SearchMode) -> Nothing | None:
    """Why the search of ``query`` found nothing before ``min_score``: the filters select no memory
    (or the store holds none), a required phrase is held by none, or no memory holds the query's
    words (keyword mode); None when none of these is why."""
    if not backend.newest(filters, 1):
        return Nothing("store" if filters == Filters() else "filters")
    required = query.phrases.required
    for phrase in required:
        one = phrases.Phrases(required=(phrase,))
        if not any(one.allows(text) for _, text in backend.texts_holding(list(phrase), filters)):
            return Nothing("phrase", " ".join(phrase))
    if required:  # each is held, never all together
        return Nothing("phrase", '" and "'.join(" ".join(phrase) for phrase in required))
    if mode is SearchMode.KEYWORD:
        return Nothing("words", query.text)
    return None


def identifier_notes(
    backend: Backend, query: Query, filters: Filters, hits: Sequence[Hit], mode: SearchMode
) -> tuple[str, ...]:
    """For each identifier-like word of the query (``Query.identifiers``) that none of ``hits``
    holds and no filtered memory holds as a keyword term: a note that the hits are only near it by
    meaning (not in keyword mode, whose hits hold the words they were found by)."""
    if mode is SearchMode.KEYWORD or not hits:
        return ()
    texts = [hit.memory.text.lower() for hit in hits]
    notes = []
    for word in query.identifiers:
        if any(word.lower() in text for text in texts):
            continue
        if not backend.keyword_top(word, filters, 1, None, query.scope):
            notes.append(f"No memory holds '{word}': these hits are only near it by meaning.")
    return tuple(notes)
