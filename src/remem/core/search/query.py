"""A search's query, read once into a value: the text the lanes search, its quoted and whole
phrases, the time words and the window they name, the names it may give speakers, whether the
model reads its script, the words that look like identifiers, and its keyword terms.

Every later step of a search (``pool``, ``fuse``, the hits' snippets, the notes) reads this value
and never the raw query again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from remem.backends.analyzer import analyze, is_cjk
from remem.core import scripts
from remem.core.search import dates, phrases, speakers
from remem.reports import DateReading
from remem.times import utc_iso
from remem.timewords import find_window
from remem.types import Filters

#: A word that looks like an identifier: letters and digits mixed (``E1046``, ``v2.3.1``, a hash),
#: or an upper-case code of four letters or more (``ECONNRESET``, ``OOMKILLED``).
_IDENTIFIER = re.compile(
    r"(?<![\w.-])(?:(?=[\w.-]*\d)(?=[\w.-]*[^\W\d_])[^\W_][\w.-]*[^\W_]|[A-Z][A-Z_]{3,}[A-Z])(?![\w-])"
)


_NO_PHRASES = phrases.Phrases()


@dataclass(frozen=True)
class Query:
    """A query as every step of a search reads it (see the module docstring)."""

    #: What the lanes search: the query without the time words it was read with.
    text: str
    phrases: phrases.Phrases = _NO_PHRASES
    #: The store's model cannot compare this query's script with the other one (``scripts``).
    blind_across_scripts: bool = False
    #: The query is written mostly in CJK characters.
    cjk: bool = False
    #: The names it may give speakers: its capitalised words and runs of them (``speakers``).
    names: tuple[str, ...] = ()
    #: Its words that look like identifiers (``E1046``, ``ECONNRESET``), as written.
    identifiers: tuple[str, ...] = ()
    #: Its keyword terms as the analyzer makes them (what a long hit's snippet looks for).
    terms: tuple[str, ...] = ()
    #: Its time words and the window they name (a lift, never a filter); None without any.
    window: DateReading | None = None
    #: The memories whose statistics the keyword lane counts (None: the whole store's).
    scope: Filters | None = None

    @property
    def window_filters(self) -> tuple[str, str | None] | None:
        """The window as UTC (since, until) for a filter's created_at bounds; None without one."""
        if self.window is None:
            return None
        return utc_iso(self.window.start), None if self.window.end is None else utc_iso(self.window.end)

    def vector_text(self, named: frozenset[str]) -> str:
        """What the vector lane embeds: the text without the speakers it names (``speakers``)."""
        return speakers.without(self.text, named) or self.text


def read(
    text: str,
    languages: Sequence[str] = (),
    scope: Filters | None = None,
    now: datetime | None = None,
) -> Query:
    """``text`` read once for a model declaring ``languages``, its keyword statistics ``scope``'s;
    with ``now`` (timezone-aware) its time words are read as a window in ``now``'s zone and taken
    out of the searched text (without it, no time words are read). ``now``'s zone with rules
    (``timewords.LOCAL``, a ``zoneinfo.ZoneInfo``) gives each day's midnight that day's offset."""
    blind = scripts.blind_across_scripts(languages)
    window = None if now is None else dates.reading(text, find_window(text, now))
    searched = text if window is None else window.rest
    cjk, terms = is_cjk(searched), tuple(analyze(searched))
    return Query(
        searched,
        phrases.of_query(searched),
        blind,
        cjk,
        tuple(speakers.candidates(searched)),
        tuple(dict.fromkeys(m.group(0) for m in _IDENTIFIER.finditer(searched))),
        terms,
        window,
        scope,
    )
