"""Snippets: which part of a long memory a search matched, chosen once in the core for every back-end
and every front-end (tables, ``--json``, MCP, the Python API).

A hit whose text is longer than ``LONG_TEXT`` characters gets a ``Snippet``: a span of about
``SNIPPET_CHARS`` characters of its text. The span is the one holding the most query-term weight:
the query's keyword terms (the analyzer's, as both back-ends index them) are found in the text by
plain substring search (one linear pass per term, no model, no database). A term matches where a
word starts; a word of four letters or more may run on (``deploy`` finds ``deployed``, ``log`` only
``log``), and one of five or more first loses ``ing``/``ed``/``es``/``s`` (a rough stand-in for the
stemmer); identifiers match whole, CJK bigrams anywhere. A term counts less the more often the text
holds it (log inverse frequency over the text's windows), so one rare identifier outweighs a common
word repeated. A text holding none of the terms (a hit by meaning alone) shows its start: the lanes
keep only each memory's best score, not which of its windows gave it. The span's ends move between
words where a space is near.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from remem.backends.analyzer import analyze, cjk_pattern, looks_like_hash
from remem.types import Snippet

#: A text up to this many characters is shown whole: it gets no snippet.
LONG_TEXT = 400
#: About how long a snippet is (characters; a single longer match is cut to this).
SNIPPET_CHARS = 300
#: A word-like term this long or longer also finds the words it starts (shorter ones: whole words only).
MIN_PREFIX = 4
#: How far an end of the span may move to fall between words.
WORD_SLACK = 30
_SUFFIXES = ("ing", "ed", "es", "s")
#: Where a text has a letter or digit (a match must not start right after one).
_ALNUM = re.compile(r"[^\W_]")


def snippet_of(text: str, terms: Sequence[str]) -> Snippet | None:
    """The best-matching span of a long ``text`` for a query's analyzer ``terms`` (see the module
    docstring); None when the text is short enough to show whole. ``text[start:end] == snippet.text``."""
    if len(text) <= LONG_TEXT:
        return None
    lowered = text.lower()
    matches = _matches(lowered, terms) if len(lowered) == len(text) else _matches_folded(text, terms)
    if not matches:
        return _span(text, 0, 0)
    first, last = _best_window(matches, len(text))
    return _span(text, first, last)


def query_terms(query: str) -> list[str]:
    """The distinct keyword terms of a query, as ``snippet_of`` looks for them."""
    return list(dict.fromkeys(_searched(term) for term in analyze(query)))


def _searched(term: str) -> str:
    """What a term is looked for as: a long word without a common English suffix."""
    if term.isascii() and term.isalpha() and len(term) >= 5:
        for suffix in _SUFFIXES:
            if term.endswith(suffix) and len(term) - len(suffix) >= 4:
                return term[: -len(suffix)]
    return term


Match = tuple[int, int, int]  # start, end, term number


def _matches(lowered: str, terms: Sequence[str]) -> list[Match]:
    """Every occurrence of each term in the lower-cased text that starts a word (CJK: anywhere),
    in text order; a word-like term may run on (a prefix of the word), an identifier may not."""
    found: list[Match] = []
    for number, term in enumerate(terms):
        cjk = not term.isascii() and cjk_pattern("[CJK]").search(term) is not None
        runs_on = (term.isalpha() and len(term) >= MIN_PREFIX) or looks_like_hash(term)
        for hit in re.finditer(re.escape(term), lowered):
            start, end = hit.span()
            if not cjk and start and _ALNUM.match(lowered, start - 1):
                continue
            if not (cjk or runs_on) and _ALNUM.match(lowered, end):
                continue
            found.append((start, end, number))
    return sorted(found)


def _matches_folded(text: str, terms: Sequence[str]) -> list[Match]:
    """``_matches`` for a text whose lower case changes its length (rare letters such as ``İ``):
    character by character, so offsets stay those of ``text``."""
    return _matches("".join(char if len(char.lower()) != 1 else char.lower() for char in text), terms)


def _best_window(matches: list[Match], length: int) -> tuple[int, int]:
    """The start of the first and the end of the last match of the run of matches, within
    ``SNIPPET_CHARS``, with the most weight (then the most matches, then the earliest)."""
    counts: dict[int, int] = {}
    for _, _, number in matches:
        counts[number] = counts.get(number, 0) + 1
    windows = max(1, length // SNIPPET_CHARS)
    weight = {number: math.log(1 + windows / count) for number, count in counts.items()}
    inside: dict[int, int] = {}
    best, best_key, score, following = (0, 0), (-1.0, 0), 0.0, 0
    for first, (start, _, _) in enumerate(matches):
        while following < len(matches) and matches[following][1] <= start + SNIPPET_CHARS:
            number = matches[following][2]
            inside[number] = inside.get(number, 0) + 1
            score += weight[number] if inside[number] == 1 else 0.0
            following += 1
        last = max(following, first + 1)
        key = (score, last - first)
        if key > best_key:
            best, best_key = (first, last - 1), key
        number = matches[first][2]
        if first < following:
            inside[number] -= 1
            score -= weight[number] if inside[number] == 0 else 0.0
        else:
            following = first + 1
    return matches[best[0]][0], max(end for _, end, _ in matches[best[0] : best[1] + 1])


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
