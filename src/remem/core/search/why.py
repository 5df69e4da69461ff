"""What a person should know of a search once it is ranked (``said``): why it found nothing
(``nothing``); a note when a query that looks like an identifier found only memories near it by
meaning (``unheld_by_hits``, then the back-end); how its time words were read, ``all_time`` when no
pooled memory is from their window; and that the model cannot read the query's script
(``unread_query_note``; ``scripts``).

They ask the back-end only for an empty result, or an identifier none of the hits holds (then one
keyword look-up per such identifier, of at most one memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from remem.core import scripts
from remem.core.search import phrases
from remem.reports import DateReading, Nothing
from remem.types import Filters, Hit, SearchMode

if TYPE_CHECKING:
    from remem.backends.base import Backend
    from remem.core.search.pool import Asked, Pool
    from remem.core.search.query import Query


@dataclass(frozen=True)
class Said:
    """What ``said`` found to say: why nothing was found (None: not for another reason than
    ``min_score``), the notes, and how the time words were read."""

    nothing: Nothing | None
    notes: tuple[str, ...]
    dates: DateReading | None


def said(
    asked: Asked,
    query: Query,
    mode: SearchMode,
    pool: Pool,
    ranked: bool,
    hits: Sequence[Hit],
    languages: Sequence[str],
) -> Said:
    """What a person should know of the search of ``query`` that ``asked`` (with its model, which
    declares ``languages``) made in ``mode``, its ``pool``, whether it ``ranked`` any memory, and
    its ``hits`` (see the module docstring); notes in this order: the script the model cannot read,
    the identifiers, the time words. The back-end is asked last, in one place (``_asked``)."""
    window = query.window
    if window is not None:
        window = replace(window, all_time=not any(c.in_window for c in pool.candidates))
    unread = None
    if asked.model is not None and query.blind_across_scripts and query.cjk:
        unread = unread_query_note(asked.model.name, languages, vector_only=mode is SearchMode.VECTOR)
    unheld = () if mode is SearchMode.KEYWORD else unheld_by_hits(query.identifiers, hits)
    empty, unfound = _asked(asked.backend, query, asked.filters, None if ranked else mode, unheld)
    found = tuple(f"No memory holds '{word}': these hits are only near it by meaning." for word in unfound)
    notes = (*([unread] if unread else []), *found, *([window.note()] if window else []))
    return Said(empty, notes, window)


def unread_query_note(model: str, languages: Sequence[str], *, vector_only: bool) -> str:
    """The note for a CJK query searched with ``model``, which declares ``languages`` and cannot read
    CJK (``scripts.blind_across_scripts``; ``vector_only``: in vector mode, which has no keyword
    lane)."""
    reads = ", ".join(scripts.LANGUAGE_NAMES.get(code, code) for code in languages)
    found = (
        "vector search cannot read this query; keyword search matches its characters"
        if vector_only
        else "this query can match by its characters, not by its meaning"
    )
    return (
        f"{model} reads {reads} only: {found}; {scripts.MULTILINGUAL_MODEL} reads CJK by meaning: "
        f"{scripts.MULTILINGUAL_HOW}."
    )


def unheld_by_hits(identifiers: Sequence[str], hits: Sequence[Hit]) -> tuple[str, ...]:
    """The identifier-like words of a query (``Query.identifiers``) that none of ``hits`` holds
    (none without hits)."""
    texts = [hit.memory.text.lower() for hit in hits]
    return tuple(word for word in identifiers if texts and not any(word.lower() in text for text in texts))


def _asked(
    backend: Backend, query: Query, filters: Filters, empty: SearchMode | None, unheld: Sequence[str]
) -> tuple[Nothing | None, tuple[str, ...]]:
    """What the back-end says: why a search in mode ``empty`` found nothing (``nothing``; None when
    it ranked memories), and which of the ``unheld`` words no filtered memory holds as a keyword
    term (one look-up of at most one memory each)."""
    why = None if empty is None else nothing(backend, query, filters, empty)
    return why, tuple(word for word in unheld if not backend.keyword_top(word, filters, 1, None, query.scope))


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
