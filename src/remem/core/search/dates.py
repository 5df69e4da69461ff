"""Time words in a query: "the bug from Tuesday" → the text "the bug" and a created_at window (which
ranks memories from then higher, ``fuse.TIME_WEIGHT``; it filters nothing).

The grammar (today, yesterday, last week, weekdays, N days ago, in May, ISO dates, since …) is
``remem.timewords``'; here a search reads it in its query, in time linear in the query's length
(the retired bench/query_words.py, 2-core AMD EPYC at load 16: 40,000 characters of "to monday" read
in 0.67 s, 100,000 in 1.72 s).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from remem.reports import DateReading

if TYPE_CHECKING:
    from remem.timewords import Found

__all__ = ["reading", "tidied"]


def reading(query: str, found: Found | None) -> DateReading | None:
    """The time expression ``found`` in ``query`` (``timewords.find_window``: the first, read as a
    window in its ``now``'s zone) with the rest of the query; None when the query has none."""
    if found is None:
        return None
    match, start, end = found
    return DateReading(phrase=match.group(0), rest=_rest(query, match) or query, start=start, end=end)


def _rest(query: str, match: re.Match[str]) -> str:
    """The query without the expression, spaces tidied; '' when no word is left."""
    rest = tidied(query[: match.start()] + " " + query[match.end() :])
    return tidied(re.sub(r"^['’]s\b\s*", "", rest))  # "last week's incidents" → "incidents"


def tidied(rest: str) -> str:
    """What is left of a query once words are taken out of it: runs of spaces as one, none before
    punctuation, none at the ends; '' when no word is left."""
    rest = re.sub(r"\s+([?!.,;:])", r"\1", re.sub(r"\s+", " ", rest)).strip()
    return rest if re.search(r"\w", rest) else ""
