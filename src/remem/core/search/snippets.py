"""Snippets: which part of a long memory a search matched, chosen once in the core for every back-end
and every front-end (tables, ``--json``, MCP, the Python API).

A hit whose text is longer than ``LONG_TEXT`` characters gets a ``Snippet``: a span of about
``SNIPPET_CHARS`` characters of its text. The span is the one holding the most query-term weight:
the query's keyword terms (the analyzer's, as both back-ends index them; the first ``MAX_TERMS``)
are found in the text by plain substring search (no model, no database). A term matches where a
word starts; a word of four letters or more may run on (``deploy`` finds ``deployed``, ``log`` only
``log``), and one of five or more first loses ``ing``/``ed``/``es``/``s`` (a rough stand-in for the
stemmer); identifiers match whole, CJK bigrams anywhere. A term counts less the more often the text
holds it (log inverse frequency over the text's windows), so one rare identifier outweighs a common
word repeated. The candidate spans are those around the first ``MAX_ANCHORS`` matches of the rarest
terms (the best span holds a match, and rare terms weigh most), so the cost stays a few passes over
the text however often a common word occurs. A text holding none of the terms (a hit by meaning
alone) shows its start: the lanes keep only each memory's best score, not which of its windows gave
it. The span's ends move between words where a space is near.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from remem.backends.analyzer import cjk_pattern, looks_like_hash
from remem.types import Hit, Snippet

if TYPE_CHECKING:
    from remem.core.search.fuse import Ranked
    from remem.core.search.query import Query
    from remem.types import Calibration, Memory

#: A text up to this many characters is shown whole: it gets no snippet (costing a search one length
#: check). Choosing the snippet of a 2,000,000-character hit took 7-21 ms (none of the query's words
#: in it / one 33,000 times), a search finding it among 2,000 short memories 530 ms against 500-520
#: without snippets, mostly reading the text (the retired bench/snippets.py, 2-core AMD EPYC).
LONG_TEXT = 400
#: About how long a snippet is (characters; a single longer match is cut to this).
SNIPPET_CHARS = 300
#: A word-like term this long or longer also finds the words it starts (shorter ones: whole words only).
MIN_PREFIX = 4
#: At most this many of the query's terms are looked for (a pasted page of a query has hundreds).
MAX_TERMS = 32
#: Candidate spans are taken around at most this many matches (see the module docstring).
MAX_ANCHORS = 200
#: How far an end of the span may move to fall between words.
WORD_SLACK = 30
_SUFFIXES = ("ing", "ed", "es", "s")
#: Where a text has a letter or digit (a match must not start right after one).
_ALNUM = re.compile(r"[^\W_]")


def hits(
    ranked: Sequence[Ranked], scored: Sequence[Calibration], memories: Mapping[int, Memory], query: Query
) -> list[Hit]:
    """The first ranked memories, one per calibration (those ``memories`` holds), as hits scored by
    their relevance, a long text with the snippet ``query`` matched."""
    found = []
    terms: list[str] | None = None  # found when a hit first needs them
    for r, calibrated in zip(ranked, scored, strict=False):
        memory = memories.get(r.id)
        if memory is None:
            continue
        snippet = None
        if len(memory.text) > LONG_TEXT:
            terms = query_terms(query.terms) if terms is None else terms
            snippet = snippet_of(memory.text, terms)
        found.append(Hit(memory, calibrated.relevance, r.vector, r.keyword, snippet, r.lifts, calibrated))
    return found


def snippet_of(text: str, terms: Sequence[str]) -> Snippet | None:
    """The best-matching span of a long ``text`` for a query's analyzer ``terms`` (see the module
    docstring); None when the text is short enough to show whole. ``text[start:end] == snippet.text``."""
    if len(text) <= LONG_TEXT:
        return None
    lowered = text.lower()
    if len(lowered) != len(text):  # a letter such as "İ" grows in lower case: keep it, keep offsets
        lowered = "".join(char if len(char.lower()) != 1 else char.lower() for char in text)
    present = sorted(
        (t for t in (_Term(term, lowered) for term in terms[:MAX_TERMS]) if t.count), key=_Term.rarity
    )
    first, last = _best_span(present, max(1, len(text) // SNIPPET_CHARS))
    return _span(text, first, last)


def _best_span(present: Sequence[_Term], windows: int) -> tuple[int, int]:
    """The first match's start and the last match's end in the candidate span (around an anchor:
    ending at it, centred on it, starting at it) holding the most weight (the earliest of equals);
    (0, 0) when no term matches."""
    weights = {term.term: math.log(1 + windows / term.count) for term in present}
    best: tuple[float, int, int] = (0.0, 0, 0)  # weight, first match start, last match end
    for anchor, anchor_end in _anchors(present):
        for start in (anchor_end - SNIPPET_CHARS, anchor - SNIPPET_CHARS // 2, anchor):
            low = max(0, start)
            high = max(low + SNIPPET_CHARS, anchor_end) if start == anchor else low + SNIPPET_CHARS
            spans = [(term.term, term.first(low, high)) for term in present]
            inside = [(term, span) for term, span in spans if span is not None]
            if not inside:  # an anchor longer than a snippet is only inside the span starting at it
                continue
            weight = sum(weights[term] for term, _ in inside)
            first = min(span[0] for _, span in inside)
            if (weight, -first) > (best[0], -best[1]):
                best = (weight, first, max(span[1] for _, span in inside))
    return best[1], best[2]


def query_terms(analyzed: Sequence[str]) -> list[str]:
    """The distinct terms ``snippet_of`` looks for, of a query's ``analyzed`` keyword terms
    (``Query.terms``)."""
    return list(dict.fromkeys(_searched(term) for term in analyzed))


def _searched(term: str) -> str:
    """What a term is looked for as: a long word without a common English suffix."""
    if term.isascii() and term.isalpha() and len(term) >= 5:
        for suffix in _SUFFIXES:
            if term.endswith(suffix) and len(term) - len(suffix) >= 4:
                return term[: -len(suffix)]
    return term


class _Term:
    """A query term in one lower-cased text: how often the text holds it (as a substring: an
    upper bound, for its weight) and where it matches (see the module docstring)."""

    def __init__(self, term: str, lowered: str) -> None:
        self.term, self.text = term, lowered
        self.cjk = not term.isascii() and cjk_pattern("[CJK]").search(term) is not None
        self.runs_on = (term.isalpha() and len(term) >= MIN_PREFIX) or looks_like_hash(term)
        self.count = lowered.count(term) if term else 0

    def rarity(self) -> int:
        """How often the text holds the term (rarer first)."""
        return self.count

    def matches(self, start: int = 0, stop: int | None = None, finds: int = -1) -> Iterator[tuple[int, int]]:
        """(start, end) of each match within ``text[start:stop]``, in order; with ``finds``, only
        among the first ``finds`` places that hold the term (a match or inside a longer word)."""
        text, term, size = self.text, self.term, len(self.term)
        at = text.find(term, start, stop)
        while at >= 0 and finds != 0:
            end, finds = at + size, finds - 1
            if self.cjk or (
                not (at and _ALNUM.match(text, at - 1)) and (self.runs_on or not _ALNUM.match(text, end))
            ):
                yield at, end
            at = text.find(term, at + 1, stop)

    def first(self, start: int, stop: int) -> tuple[int, int] | None:
        """The first match within ``text[start:stop]``, or None."""
        return next(self.matches(start, stop), None)


def _anchors(present: Sequence[_Term]) -> Iterator[tuple[int, int]]:
    """Up to ``MAX_ANCHORS`` matches, of the rarest terms first; each term's search gives up after
    ``MAX_ANCHORS`` × 20 places that hold it only inside a longer word."""
    left = MAX_ANCHORS
    for term in present:
        for match in term.matches(finds=20 * MAX_ANCHORS):
            if left == 0:
                return
            left -= 1
            yield match


def _span(text: str, first: int, last: int) -> Snippet:
    """About ``SNIPPET_CHARS`` of ``text`` around ``[first, last)``, its ends moved between words
    where a space is near."""
    last = min(last, first + SNIPPET_CHARS)
    start = max(0, min(first - (SNIPPET_CHARS - (last - first)) // 2, len(text) - SNIPPET_CHARS))
    end = min(len(text), start + SNIPPET_CHARS)
    if start and not text[start - 1].isspace():
        space = _first_space(text, start, min(first, start + WORD_SLACK))
        start = start if space is None else space + 1
    if end < len(text) and not text[end].isspace():
        space = _last_space(text, max(last, end - WORD_SLACK), end)
        end = end if space is None else space
    return Snippet(text[start:end], start, end)


def _first_space(text: str, start: int, stop: int) -> int | None:
    for at in range(start, stop):
        if text[at].isspace():
            return at
    return None


def _last_space(text: str, start: int, stop: int) -> int | None:
    for at in range(stop - 1, start - 1, -1):
        if text[at].isspace():
            return at
    return None
