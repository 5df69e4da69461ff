"""Time words in a query: "the bug from Tuesday" → the text "the bug" and a created_at window.

The grammar (today, yesterday, last week, weekdays, N days ago, in May, ISO dates, since …) is
``remem.timewords``'; here a search reads it in its query, in time linear in the query's length
(the retired bench/query_words.py, 2-core AMD EPYC at load 16: 40,000 characters of "to monday" read
in 0.67 s, 100,000 in 1.72 s).
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from remem.reports import DateReading
from remem.times import utc_iso
from remem.timewords import LOCAL, find_window
from remem.types import Filters

if TYPE_CHECKING:
    from remem.backends.base import Backend

__all__ = ["LOCAL", "read_dates", "tidied", "within_dates"]


def read_dates(query: str, now: datetime) -> DateReading | None:
    """The first time expression in ``query`` as a window in ``now``'s time zone, with the rest
    of the query; None when the query has none. ``now`` must be timezone-aware; a zone with rules
    (``LOCAL``, a ``zoneinfo.ZoneInfo``) gives each day's midnight the offset of that day."""
    found = find_window(query, now)
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


def within_dates(
    backend: Backend, text: str, filters: Filters, now: datetime | None = None
) -> tuple[str, Filters, DateReading | None]:
    """The query to search, its filters and the date reading: the window of the query's time words
    (local time; ``now`` defaults to the current local time) joins the filters unless they already
    bound created_at (explicit --since/--until win); a window that holds no memory is dropped
    again (``all_time``), keeping the rest of the query."""
    if filters.since is not None or filters.until is not None:
        return text, filters, None
    reading = read_dates(text, now or datetime.now(LOCAL))
    if reading is None:
        return text, filters, None
    end = None if reading.end is None else utc_iso(reading.end)
    windowed = replace(filters, since=utc_iso(reading.start), until=end)
    if not backend.newest(windowed, 1):
        return reading.rest, filters, replace(reading, all_time=True)
    return reading.rest, windowed, reading
