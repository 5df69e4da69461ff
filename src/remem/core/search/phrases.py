"""Word order: a memory holding the query's words in the query's order (a phrase match) outranks
memories that merely share them, and quoted parts of a query ("…") are required phrases.

Checked on the candidates' texts in the core, so it works the same on every back-end (the
PostgreSQL keyword lane keeps no word positions). A required phrase is a filter: its candidates are
every filtered memory whose keyword terms hold its words (``remem.backends.pooling.holders``), not
the lanes' top. Texts and phrases are compared as normalised words: NFKC, lower case, punctuation
ignored, each CJK character a word of its own (CJK does not separate words by spaces, so ``旅遊`` is
a phrase of two words). Cost (the retired bench/query_words.py, fake embedder, 2-core AMD EPYC at load 16): a
quoted phrase held by 500 of 5,000 memories took 0.32-0.40 s a search in every mode, the same words
unquoted 0.05-0.14 s.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from remem.backends.analyzer import STOP_WORDS, cjk_pattern

#: A query is a phrase to look for when it has at least this many words that are not stop words.
MIN_PHRASE_WORDS = 2

#: Words of an ASCII text; other texts need the CJK ranges (compiled when first needed).
_ASCII_WORDS = re.compile(r"[^\W_]+")
#: Quotation marks: opening → closing.
_QUOTES = {'"': '"', "“": "”", "「": "」"}


def words(text: str) -> tuple[str, ...]:
    """The normalised words of a text (see the module docstring)."""
    return _words(_normalized(text))


def _normalized(text: str) -> str:
    """``text`` in NFKC, lower case. An ASCII text is its own NFKC form, so only it is lowered: a
    hybrid search checks ~170 candidates' texts for the query's phrase, and the normalisation was
    about a third of that check's 0.9 ms (10k bench store)."""
    return (text if text.isascii() else unicodedata.normalize("NFKC", text)).lower()


def _words(normalized: str) -> tuple[str, ...]:
    """The words of a text already normalised (NFKC, lower case)."""
    if normalized.isascii():
        return tuple(_ASCII_WORDS.findall(normalized))
    return tuple(cjk_pattern(r"[CJK]|(?:(?![CJK])[^\W_])+").findall(normalized))


def _joined(sequence: tuple[str, ...]) -> str:
    return " " + " ".join(sequence) + " "


@dataclass(frozen=True)
class Phrases:
    """What word order asks of a memory: ``whole`` (the query's words, when they make a phrase)
    ranks first where present; every ``required`` phrase must be present."""

    whole: tuple[str, ...] = ()
    required: tuple[tuple[str, ...], ...] = ()

    def __bool__(self) -> bool:
        """True when word order matters for this query."""
        return bool(self.whole or self.required)

    def matches(self, text: str) -> bool:
        """True when ``text`` holds the query's words in order, next to each other."""
        return bool(self.whole) and _holds(text, self.whole)

    def allows(self, text: str) -> bool:
        """True when ``text`` holds every required phrase."""
        return all(_holds(text, phrase) for phrase in self.required)

    @property
    def required_words(self) -> tuple[str, ...]:
        """The words of every required phrase, in order (what a memory holding them must hold)."""
        return tuple(word for phrase in self.required for word in phrase)


def _holds(text: str, phrase: tuple[str, ...]) -> bool:
    """True when ``text``'s words hold ``phrase``; its words are found only when the normalised
    text contains every word of the phrase (most candidates do not: one substring test each)."""
    normalized = _normalized(text)
    if not all(map(normalized.__contains__, phrase)):
        return False
    return _joined(phrase) in _joined(_words(normalized))


def quoted_parts(text: str) -> list[str]:
    """The parts of a text between quotation marks ("…", “…”, 「…」), left to right; an opening
    mark without its closing one is a character like any other. One pass: linear in the text."""
    parts: list[str] = []
    ahead = {mark: text.find(mark) for mark in _QUOTES}  # the next opening mark of each kind
    position = 0
    while True:
        waiting = [(at, mark) for mark, at in ahead.items() if at >= 0]
        if not waiting:
            return parts
        at, mark = min(waiting)
        end = text.find(_QUOTES[mark], at + 1)
        if end < 0:  # never closed: no later mark of this kind is either
            del ahead[mark]
            continue
        parts.append(text[at + 1 : end])
        position = end + 1
        ahead = {m: a if a >= position else text.find(m, position) for m, a in ahead.items() if a >= 0}


def of_query(text: str) -> Phrases:
    """The phrases of a query: its quoted parts are required; the whole query is a phrase to
    prefer when it has at least MIN_PHRASE_WORDS words that are not stop words."""
    required = []
    for part in quoted_parts(text):
        quoted = words(part)
        if quoted:
            required.append(quoted)
    whole = words(text)
    content = [word for word in whole if word not in STOP_WORDS]
    return Phrases(whole if len(content) >= MIN_PHRASE_WORDS else (), tuple(dict.fromkeys(required)))
