"""The keyword lane's analyzer, shared by every back-end: text → index terms that keep identifiers
whole, and safe FTS5 queries (the local store); the PostgreSQL store indexes the same terms.

A memory's text is turned into terms before it reaches SQLite FTS5:
- identifiers stay whole: ``libcublas.so.12``, ``numpy``/``1.26.4`` (from ``numpy==1.26.4``),
  ``10.0.0.12`` (also from ``10.0.0.12:8080``), ``snake_case_name``, ``kebab-case``,
  ``etc/nginx/nginx.conf`` and its segment ``nginx.conf``, ``e1045``; sentence punctuation around
  them is dropped;
- they are *also* split into their alphanumeric parts (``libcublas``, ``payments``, ``8080``), so a
  part matches too, but a query for the whole identifier prefers memories holding all of it (rarer
  term); numbers of one or two digits inside an identifier (the ``1``, ``26``, ``4`` of ``1.26.4``)
  are not kept as parts, so ``1.26.6`` does not look like evidence for ``1.26.4``;
- ordinary words lose English stop words here and are Porter-stemmed by FTS5 itself, so "runs",
  "running" and "run" match each other;
- Chinese, Japanese and Korean runs (which do not separate words by spaces) become overlapping
  character bigrams, the classic CJK analyzer: ``旅遊英文`` → ``旅遊``, ``遊英``, ``英文``; a
  one-character run is kept as it is. A query's CJK run is analysed the same way, so ``旅遊``
  finds every text holding those two characters in a row.
Queries go through the same analyzer and become an OR of quoted terms; hex strings of 7+ characters
(commit hashes) match as prefixes. User text is never interpreted as FTS5 query syntax.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

#: Bump when the analyzer changes: stores rebuild their keyword index to match.
ANALYZER_VERSION = "4"  # 4: a memory's names (role, user, tags) are terms too
#: How much a keyword match in a memory's context (the turns before a chat turn, ``remem.core.turns``)
#: counts against one in its own text and names. LoCoMo keyword evidence recall@10 (local store):
#: 0.62 at 0, 0.67 at 0.1, 0.70 at 0.2, 0.71 at 0.3; hybrid 0.708 / 0.718 / 0.723 / 0.725.
CONTEXT_WEIGHT = 0.1
#: Characters that may sit inside an identifier (FTS5 keeps them inside tokens too).
IDENTIFIER_PUNCTUATION = "._-/:@+#"
MIN_HASH_PREFIX = 7

_PIECES = re.compile(rf"[\w{re.escape(IDENTIFIER_PUNCTUATION)}]+")
_PARTS = re.compile(r"[^\W_]+")
_HEX = re.compile(r"[0-9a-f]+")
_SEGMENT_SEPARATORS = re.compile(r"[/:@]+")
#: Han (with extensions and compatibility ideographs), kana, Hangul syllables and jamo, 々/〆.
CJK_CHARACTERS = (
    "\u1100-\u11ff\u3005\u3006\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff\U00020000-\U0003134f"
)


@functools.cache
def cjk_pattern(template: str) -> re.Pattern[str]:
    """``template`` with ``CJK`` replaced by the CJK character ranges, compiled on first use: the
    ranges take milliseconds to compile, and ASCII texts never need them."""
    return re.compile(template.replace("CJK", CJK_CHARACTERS))


#: A text is CJK when at least this share of its letters are CJK characters.
MIN_CJK_SHARE = 1 / 3


def is_cjk(text: str) -> bool:
    """True when a text is written mostly in CJK characters (see MIN_CJK_SHARE)."""
    if text.isascii():
        return False
    letters = sum(1 for char in text if char.isalpha())
    return letters > 0 and len(cjk_pattern("[CJK]").findall(text)) >= MIN_CJK_SHARE * letters


_STOP_WORDS_TEXT = """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few for
    from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves"""
#: English stop words dropped from texts and queries (they carry no keyword evidence).
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


def _piece_terms(piece: str) -> list[str]:
    core = piece.strip(IDENTIFIER_PUNCTUATION)
    parts = _PARTS.findall(core)
    compound = len(parts) > 1 or (parts and parts[0] != core)  # inner punctuation: an identifier
    # Short numbers inside an identifier ("1", "26" of "1.26.4") are noise, not evidence.
    terms = [p for p in parts if p not in STOP_WORDS and not (compound and p.isdigit() and len(p) < 3)]
    if compound:
        terms.append(core)
        segments = _SEGMENT_SEPARATORS.split(core)
        if len(segments) > 1:  # paths, host:port, user@host: each compound segment on its own too
            terms.extend(
                seg.strip(IDENTIFIER_PUNCTUATION) for seg in segments if len(_PARTS.findall(seg)) > 1
            )
    return terms


def cjk_bigrams(run: str) -> list[str]:
    """A CJK run's overlapping character bigrams (a one-character run: itself)."""
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def _terms(piece: str) -> list[str]:
    """A piece's terms: CJK runs as bigrams, what lies between them as words and identifiers."""
    if piece.isascii() or not cjk_pattern("[CJK]").search(piece):
        return _piece_terms(piece)
    terms: list[str] = []
    for number, part in enumerate(cjk_pattern("([CJK]+)").split(piece)):
        terms.extend(cjk_bigrams(part) if number % 2 else _piece_terms(part) if part else [])
    return terms


def analyze(text: str) -> list[str]:
    """The index terms of a text, lower-cased, in order (identifiers whole and split; no stop
    words; CJK runs as character bigrams)."""
    normalized = unicodedata.normalize("NFKC", text).lower()
    return [term for piece in _PIECES.findall(normalized) for term in _terms(piece)]


def memory_terms(text: str, names: Iterable[str | None] = ()) -> list[str]:
    """A memory's index terms: its text's, then its names' — who said it (role), whose it is
    (user), its tags — so "what does Evan drive?" finds Evan's own turns; the text is unchanged."""
    return [*analyze(text), *(term for name in names if name for term in analyze(name))]


def index_text(text: str, names: Iterable[str | None] = ()) -> str:
    """What is stored in the FTS5 table for a memory: its terms (``memory_terms``) separated by spaces."""
    return " ".join(memory_terms(text, names))


def looks_like_hash(term: str) -> bool:
    return (
        len(term) >= MIN_HASH_PREFIX
        and _HEX.fullmatch(term) is not None
        and any(c.isdigit() for c in term)
        and any(c.isalpha() for c in term)
    )


#: A word longer than this (UTF-8 bytes) is not counted on to be an index term: a store may leave
#: a word too long for its index out of the keyword terms.
MAX_SURE_WORD_BYTES = 255


def sure_terms(words: Iterable[str]) -> list[str]:
    """Of a text's words (runs of letters and digits of its NFKC lower-cased text, each CJK character
    a word of its own: ``remem.core.search.phrases.words``), those that every memory whose text holds the word
    surely has among its own index terms: no stop word, no number of one or two digits (left out
    inside identifiers), no CJK (indexed as bigrams), none very long; each once, in order."""
    return list(
        dict.fromkeys(
            word
            for word in words
            if word not in STOP_WORDS
            and not (word.isdigit() and len(word) < 3)
            and (word.isascii() or not cjk_pattern("[CJK]").search(word))
            and len(word.encode()) <= MAX_SURE_WORD_BYTES
        )
    )


def quoted_term(term: str) -> str:
    """A term as an FTS5 string (``"`` doubled): matched as the term, never as query syntax."""
    return '"' + term.replace('"', '""') + '"'


#: The most distinct terms a query contributes to the keyword lane, on every back-end: the first
#: this many in the query's order; the rest are not searched (a pasted 10,000-character CJK text
#: is ~10,000 bigrams, each a count and a doclist to walk). No query of SciFact (27 at most), LoCoMo
#: (15) or the memory-shaped set comes near it.
MAX_QUERY_TERMS = 64


def query_terms(text: str) -> list[str]:
    """The distinct terms a query searches for (``analyze``), in order, at most ``MAX_QUERY_TERMS``."""
    return list(dict.fromkeys(analyze(text)))[:MAX_QUERY_TERMS]


def term_queries(text: str) -> list[str]:
    """One FTS5 expression per query term (``query_terms``): a quoted string (``"`` doubled), ``*``
    for hashes.

    Quoting makes ``"``, ``*``, ``-``, ``:``, ``NEAR``, ``AND``, parentheses in user text plain
    characters; hash-like hex terms become prefix queries.
    """
    return [quoted_term(term) + ("*" if looks_like_hash(term) else "") for term in query_terms(text)]
