"""Time words: "the bug from Tuesday" → the phrase "from Tuesday" and its created_at window
(remem.core.search.dates reads them in queries; --since/--until take them as a moment,
remem.inputs.parse_when).

A small grammar, in the user's local time zone (weeks start on Monday):

- ``today``, ``yesterday``; ``this week``/``last week``, ``this month``/``last month``;
- ``<weekday>``, ``on/from <weekday>``, ``last <weekday>``: the most recent such day before today
  (1–7 days ago); ``this <weekday>``: that day of this week;
- ``N days ago`` (that day), ``N weeks ago`` (the week holding the day N × 7 days ago), N in digits
  or ``a``/``one`` … ``ten``;
- ``in/during <month> [year]``: the most recent such month (``May`` only capitalised: ``may`` is a verb);
- ISO dates, ``2026-11-24`` (that day), optionally after ``on``/``from``;
- written dates, ``16 November, 2023``, ``November 16th 2023``, ``16 Nov 2023``, ``the 3rd of
  March`` (that day), optionally after ``on``/``from``; a month in full or abbreviated, in lower
  case only after ``on``/``from``/``since`` or before a year; without a year, the most recent such
  day (today included);
- ``since`` before any of these: from its start until now.

Words that only look temporal do not trigger: plurals ("Thursdays at 10am"), a month without
``in``/``during`` ("May said…"), ordinals ("second"), and a weekday after ``to``, ``until``,
``by``, ``every``, ``next``, … (a plan, not a past day). The first expression in the query wins.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone, tzinfo

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
NUMBERS |= {"seven": 7, "eight": 8, "nine": 9, "ten": 10}
#: A bare weekday after one of these is a plan or a habit, not a day that passed.
NOT_A_PAST_DAY = frozenset({"to", "until", "till", "by", "every", "each", "next", "before", "after", "at"})
#: How far back ``N days/weeks ago`` may reach.
MAX_AGO = 3660

_DAY = "|".join(WEEKDAYS)
_MONTH = "|".join(MONTHS)
_NUMBER = r"\d{1,4}|" + "|".join(NUMBERS)
#: A month written in a date: in full or abbreviated ("Nov", "Nov."; "Sept" too).
_MONTH_WORD = "|".join([*MONTHS, *(m[:3] for m in MONTHS), "sept"])
_DAY_OF_MONTH = r"(?P<dom>[0-3]?\d)(?P<nth>st|nd|rd|th)?"
_WRITTEN_YEAR = r"(?:,?\s+(?P<year>\d{4})\b)?"
#: A written date's start: "since", "on"/"from", a weekday ("Monday, 16 November 2023": the date
#: names the day, the weekday is not read on its own).
_WRITTEN_START = r"(?P<since>since\s+)?(?P<on>(?:from|on)\s+)?(?:(?:" + _DAY + r"),?\s+)?"
#: "16 November", "the 3rd of March"; "November 16th", "Nov. 16" (not a time: "March 3 pm").
_DAY_MONTH = rf"(?:the\s+)?(?<![-./:\d]){_DAY_OF_MONTH}\s+(?P<of>of\s+)?(?P<month>{_MONTH_WORD})\b\.?"
_DAY_MONTH += r"(?!['’-])"
_MONTH_DAY = rf"(?P<month>{_MONTH_WORD})\.?\s+{_DAY_OF_MONTH}\b(?![-:./]\d|\s*(?:am|pm|%)\b)"
_PATTERNS = (
    r"(?P<since>since\s+)?(?:(?:from|on)\s+)?(?P<rel>today|yesterday)\b(?!-)",
    r"(?P<since>since\s+)?(?:(?:from|during|in)\s+)?(?P<which>this|last)\s+(?P<unit>week|month)\b(?!-)",
    r"(?P<since>since\s+)?(?:(?:from|on)\s+)?(?:(?P<which>last|this)\s+)?(?P<day>" + _DAY + r")\b(?!-)",
    r"(?P<since>since\s+)?(?:from\s+)?(?P<n>" + _NUMBER + r")\s+(?P<unit>days?|weeks?)\s+ago\b",
    r"(?P<since>since\s+)?(?:in|during)\s+(?:early\s+|late\s+)?(?P<month>" + _MONTH + r")\b"
    r"(?!['’-])(?:\s+(?P<year>\d{4})\b)?",
    r"(?P<since>since\s+)?(?:(?:from|on)\s+)?(?<![-./:])(?P<iso>\d{4}-\d{2}-\d{2})\b(?![-:T\d]|\.\w)",
    _WRITTEN_START + _DAY_MONTH + _WRITTEN_YEAR,
    _WRITTEN_START + _MONTH_DAY + _WRITTEN_YEAR,
)
_GROUPS = ("since", "rel", "which", "unit", "day", "n", "month", "year", "iso", "dom", "nth", "of", "on")
_COMPILED = tuple(re.compile(r"\b" + p, re.IGNORECASE) for p in _PATTERNS)
#: On the reversed query: the gap, then the word before a position (reversed).
_WORD_BACKWARDS = re.compile(r"\W*(\w+)")


def _system_local(moment: datetime | None) -> datetime:
    """``moment``'s wall time (its fold too) read in the system's local time zone (aware, with the
    offset in force then); a moment beyond the platform's clock takes the rules of two days inside."""
    naive = (moment or datetime.now()).replace(tzinfo=None)
    try:
        return naive.astimezone()
    except (OverflowError, ValueError, OSError):
        return (naive + timedelta(days=2) if naive.year < 5000 else naive - timedelta(days=2)).astimezone()


class LocalTime(tzinfo):
    """The system's local time zone with its rules: a moment's UTC offset is the one in force at that
    moment (summer time or not), where ``datetime.now().astimezone()`` fixes today's for every day."""

    def utcoffset(self, dt: datetime | None) -> timedelta:
        """The offset in force at local wall time ``dt``."""
        return _system_local(dt).utcoffset() or timedelta(0)

    def dst(self, dt: datetime | None) -> None:
        """Not known separately (the offset includes it)."""
        return None

    def tzname(self, dt: datetime | None) -> str | None:
        """The zone's abbreviation at ``dt`` (EST, EDT, …)."""
        return _system_local(dt).tzname()

    def fromutc(self, dt: datetime) -> datetime:
        """The local wall time of the UTC time ``dt`` (the second of a repeated hour has fold 1)."""
        local = dt.replace(tzinfo=timezone.utc).astimezone()
        wall = local.replace(tzinfo=self)
        return wall if wall.utcoffset() == local.utcoffset() else wall.replace(fold=1)


#: The system's local time zone: time words are read in it.
LOCAL = LocalTime()


@dataclass(frozen=True)
class _Days:
    """A window of whole local days: [first, last + 1 day)."""

    first: date
    last: date


def _week(day: date) -> _Days:
    monday = day - timedelta(days=day.weekday())
    return _Days(monday, monday + timedelta(days=6))


def _month(year: int, month: int) -> _Days:
    following = date(year + month // 12, month % 12 + 1, 1)
    return _Days(date(year, month, 1), following - timedelta(days=1))


def _relative(today: date, groups: dict[str, str]) -> _Days | None:
    """today/yesterday, this/last week or month."""
    if groups["rel"]:
        day = today - timedelta(days=groups["rel"].lower() == "yesterday")
        return _Days(day, day)
    last, unit = groups["which"].lower() == "last", groups["unit"].lower()
    if unit == "week":
        return _week(today - timedelta(days=7 * last))
    year, month = (today.year, today.month - 1) if last else (today.year, today.month)
    return _month(year - (month == 0), month or 12)


def _weekday(today: date, groups: dict[str, str]) -> _Days:
    wanted = WEEKDAYS.index(groups["day"].lower())
    if (groups["which"] or "").lower() == "this":
        day = _week(today).first + timedelta(days=wanted)
    else:  # bare, on/from, last: the most recent one before today
        day = today - timedelta(days=(today.weekday() - wanted - 1) % 7 + 1)
    return _Days(day, day)


def _ago(today: date, groups: dict[str, str]) -> _Days | None:
    word = groups["n"].lower()
    count = NUMBERS[word] if word in NUMBERS else int(word)
    days = count * (7 if groups["unit"].lower().startswith("week") else 1)
    if days > MAX_AGO:
        return None
    day = today - timedelta(days=days)
    return _week(day) if groups["unit"].lower().startswith("week") else _Days(day, day)


def _in_month(today: date, groups: dict[str, str]) -> _Days | None:
    if groups["month"].lower() == "may" and groups["month"] != "May":  # the verb, not the month
        return None
    month = MONTHS.index(groups["month"].lower()) + 1
    year = int(groups["year"]) if groups["year"] else today.year - (month > today.month)
    return _month(year, month) if 1 <= year <= 9999 else None


def _written(today: date, groups: dict[str, str]) -> _Days | None:
    """``16 November, 2023``, ``Nov 16th``: that day (without a year, the most recent one). A month
    in lower case counts only after on/from/since or before a year ("3 march", "may 2" are verbs),
    and "N of <month>" only with an ordinal ("the 3rd of March", not "page 12 of March")."""
    word = groups["month"]
    if word.islower() and not (groups["on"] or groups["since"] or groups["year"]):
        return None
    if groups["of"] and not groups["nth"]:
        return None
    month = next(number for number, name in enumerate(MONTHS, 1) if name.startswith(word.lower()[:3]))
    year = int(groups["year"]) if groups["year"] else today.year
    try:
        day = date(year, month, int(groups["dom"]))
        if not groups["year"] and day > today:
            day = date(year - 1, month, int(groups["dom"]))
    except ValueError:
        return None
    return _Days(day, day)


def _iso(today: date, groups: dict[str, str]) -> _Days | None:
    try:
        day = date.fromisoformat(groups["iso"])
    except ValueError:
        return None
    return _Days(day, day)


def _days(today: date, groups: dict[str, str]) -> _Days | None:
    """The days an expression names, or None when it names none after all."""
    resolve: Callable[[date, dict[str, str]], _Days | None]
    if groups["rel"] or (groups["unit"] and not groups["n"]):
        resolve = _relative
    elif groups["day"]:
        resolve = _weekday
    elif groups["n"]:
        resolve = _ago
    elif groups["dom"]:
        resolve = _written
    elif groups["month"]:
        resolve = _in_month
    else:
        resolve = _iso
    return resolve(today, groups)


def _matches(query: str) -> list[tuple[re.Match[str], dict[str, str]]]:
    """Every expression in the query, in order of position (the longer first where two start
    together), with its named groups ('' where a group did not take part)."""
    found = [
        (match, {name: match.groupdict().get(name) or "" for name in _GROUPS})
        for pattern in _COMPILED
        for match in pattern.finditer(query)
    ]
    return sorted(found, key=lambda item: (item[0].start(), -item[0].end()))


class _Words:
    """The word before a position of a query, read backwards from there: each look-up costs the
    characters between that word and the position, so a query's expressions are looked up in time
    linear in its length (not once over the whole prefix each)."""

    def __init__(self, query: str) -> None:
        """Words of ``query``."""
        self._query = query
        self._reversed: str | None = None

    def before(self, position: int) -> str:
        """The last word ending at or before ``position`` ('' when there is none)."""
        if self._reversed is None:
            self._reversed = self._query[::-1]
        found = _WORD_BACKWARDS.match(self._reversed, len(self._query) - position)
        return "" if found is None else found.group(1)[::-1]


def _is_plan(words: _Words, match: re.Match[str], groups: dict[str, str]) -> bool:
    """A bare weekday after "to", "every", "next"… ("moved to Thursday") names no past day."""
    if (
        not groups["day"]
        or groups["which"]
        or groups["since"]
        or match.group(0).lower() != groups["day"].lower()
    ):
        return False
    return words.before(match.start()).lower() in NOT_A_PAST_DAY


def _window(today: date, groups: dict[str, str], zone: tzinfo) -> tuple[datetime, datetime | None] | None:
    """The local start and end (None: until now) of the days an expression names, each midnight with
    the offset in force that day; None when it names none, or a bound lies beyond the years 1–9999
    (locally or in UTC: ``on 9999-12-31`` ends in the year 10000)."""
    try:
        days = _days(today, groups)
        if days is None:
            return None
        start = _midnight(days.first, zone)
        end = None if groups["since"] else _midnight(days.last + timedelta(days=1), zone)
        for bound in (start, end):
            if bound is not None:
                bound.astimezone(timezone.utc)  # raises beyond the range
    except (OverflowError, ValueError):
        return None
    return start, end


#: A time expression found in a text: its match, and the window's start and end (None: until now).
Found = tuple[re.Match[str], datetime, datetime | None]


def find_window(query: str, now: datetime) -> Found | None:
    """The first time expression in ``query`` and its window in ``now``'s time zone: start and end
    (None: until now); None when the query has none. ``now`` must be timezone-aware; a zone with
    rules (``LOCAL``, a ``zoneinfo.ZoneInfo``) gives each day's midnight the offset of that day."""
    zone = now.tzinfo
    if zone is None:
        raise ValueError("now must be timezone-aware")
    words = _Words(query)
    for match, groups in _matches(query):
        if _is_plan(words, match, groups):
            continue
        window = _window(now.date(), groups, zone)
        if window is not None:
            return match, window[0], window[1]
    return None


def _midnight(day: date, zone: tzinfo) -> datetime:
    return datetime.combine(day, time(), tzinfo=zone)
