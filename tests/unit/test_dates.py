"""Time words in queries: the grammar of remem.core.dates, and what a search does with the window."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import remem
from remem.core.search.query import read
from remem.errors import InvalidInputError
from remem.reports import DateReading
from remem.testing import FakeEmbedder

#: Monday 2026-11-30, 23:30 in UTC+9: in UTC it is still 14:30 of the same day.
TOKYO = timezone(timedelta(hours=9))
NOW = datetime(2026, 11, 30, 23, 30, tzinfo=TOKYO)


def read_dates(query: str, now: datetime) -> DateReading | None:
    """The time words of ``query`` as a search reads them at ``now``."""
    return read(query, now=now).window


@pytest.mark.parametrize(
    ("query", "phrase", "rest", "label"),
    [
        ("the bug from Tuesday", "from Tuesday", "the bug", "2026-11-24"),
        (
            "What was our decision from last Thursday?",
            "from last Thursday",
            "What was our decision?",
            "2026-11-26",
        ),
        ("the deploy we did yesterday", "yesterday", "the deploy we did", "2026-11-29"),
        ("what happened today", "today", "what happened", "2026-11-30"),
        ("notes from this week", "from this week", "notes", "2026-11-30 to 2026-12-06"),
        ("last week's incidents", "last week", "incidents", "2026-11-23 to 2026-11-29"),
        ("budget this month", "this month", "budget", "2026-11-01 to 2026-11-30"),
        ("budget last month", "last month", "budget", "2026-10-01 to 2026-10-31"),
        ("on Monday the release", "on Monday", "the release", "2026-11-23"),
        ("Sunday plans", "Sunday", "plans", "2026-11-29"),
        ("this Friday demo", "this Friday", "demo", "2026-12-04"),
        ("outage 3 days ago", "3 days ago", "outage", "2026-11-27"),
        ("outage two weeks ago", "two weeks ago", "outage", "2026-11-16 to 2026-11-22"),
        ("a day ago", "a day ago", "a day ago", "2026-11-29"),
        ("offsite in March", "in March", "offsite", "2026-03-01 to 2026-03-31"),
        ("offsite during December", "during December", "offsite", "2025-12-01 to 2025-12-31"),
        ("offsite in May 2024", "in May 2024", "offsite", "2024-05-01 to 2024-05-31"),
        ("changes since Wednesday", "since Wednesday", "changes", "since 2026-11-25"),
        ("changes since 2026-11-01", "since 2026-11-01", "changes", "since 2026-11-01"),
        ("outage on 2026-11-24", "on 2026-11-24", "outage", "2026-11-24"),
        ("What broke on 2026-11-24?", "on 2026-11-24", "What broke?", "2026-11-24"),
        ("YESTERDAY deploy", "YESTERDAY", "deploy", "2026-11-29"),
        # written dates: day first or month first, a comma or not, an ordinal, an abbreviation
        ("What did Tim say on 16 November, 2023?", "on 16 November, 2023", "What did Tim say?", "2023-11-16"),
        ("outage on November 16, 2023", "on November 16, 2023", "outage", "2023-11-16"),
        ("Nov 16th 2023 deploy", "Nov 16th 2023", "deploy", "2023-11-16"),
        ("Dec. 25, 2024 party", "Dec. 25, 2024", "party", "2024-12-25"),
        ("Sept 9 2025 notes", "Sept 9 2025", "notes", "2025-09-09"),
        ("offsite on the 3rd of March", "on the 3rd of March", "offsite", "2026-03-03"),
        ("what we chose on 2 march", "on 2 march", "what we chose", "2026-03-02"),  # lower case after "on"
        ("retro 30 November", "30 November", "retro", "2026-11-30"),  # without a year: today counts
        ("retro December 1", "December 1", "retro", "2025-12-01"),  # ... else the most recent one
        ("changes since 1 Nov 2026", "since 1 Nov 2026", "changes", "since 2026-11-01"),
        ("call on Monday, 16 November 2026", "on Monday, 16 November 2026", "call", "2026-11-16"),
    ],
)
def test_time_words_become_a_local_window(query: str, phrase: str, rest: str, label: str) -> None:
    reading = read_dates(query, NOW)
    assert reading is not None
    assert (reading.phrase, reading.rest, reading.label) == (phrase, rest, label)
    assert reading.start.tzinfo is TOKYO  # local midnight, not UTC's


def test_a_window_is_whole_local_days_and_since_is_open_ended() -> None:
    day = read_dates("from Tuesday", NOW)
    assert day is not None and day.end is not None
    assert (day.start, day.end - day.start) == (datetime(2026, 11, 24, tzinfo=TOKYO), timedelta(days=1))
    assert day.record()["since"] == "2026-11-23T15:00:00.000Z"  # 00:00 in Tokyo
    since = read_dates("since Monday", NOW)
    assert since is not None and since.end is None and since.record()["until"] is None


@pytest.mark.parametrize(
    "query",
    [
        "Meeting with the design team moved to Thursdays at 10am",
        "what time are the Thursdays meetings",
        "What May said about the deploy",
        "we may ship it in may",  # the verb, twice
        "the second attempt at the migration",
        "moved to Thursday",  # a plan, not a past day
        "every Monday standup",
        "until Friday",
        "next week",
        "libfoo 2026-11-24T10:00 log line",  # a timestamp inside an identifier
        "release v2026-11-24-beta",
        "backup-2026-11-24.tar.gz",
        "tag release-2026-11-24 notes",
        "2026-13-45 is not a date",
        "mondays",
        "weekday weekend monthly",
        "5000 days ago",  # beyond any store
        "I march 3 times a week",  # a month in lower case without on/from/since or a year
        "we may 2 of them",
        "page 12 of March report",  # "N of <month>" only with an ordinal
        "meet at March 3 pm",  # a time, not a day
        "on 31 February 2023",  # no such day
        "1234 Nov 2020",
        "version 2.16 November build",
        "",
    ],
)
def test_words_that_only_look_temporal_do_not_trigger(query: str) -> None:
    assert read_dates(query, NOW) is None


def test_the_first_expression_wins_and_a_bare_weekday_is_before_today() -> None:
    reading = read_dates("yesterday or last week", NOW)
    assert reading is not None and reading.phrase == "yesterday"
    monday = read_dates("Monday", NOW)  # today is a Monday: the one a week ago
    assert monday is not None and monday.label == "2026-11-23"


def test_now_must_be_aware() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        read_dates("yesterday", datetime(2026, 11, 30))


# --- through the API -----------------------------------------------------------------------------


def _local_day(days_ago: int, hour: int = 12) -> datetime:
    """Noon (local time) ``days_ago`` days before today."""
    today = datetime.now().astimezone()
    return today.replace(hour=hour, minute=0, second=0, microsecond=0) - timedelta(days=days_ago)


@pytest.fixture
def dated(tmp_path: Path) -> remem.Memories:
    memories = remem.open(tmp_path / "store", embedder=FakeEmbedder())
    memories.add("Fixed the null pointer bug in the importer.", created_at=_local_day(1))
    memories.add("Found a bug in the importer: it crashes on empty files.", created_at=_local_day(30))
    memories.add("The deploy went out.", created_at=_local_day(30))
    return memories


def test_search_ranks_the_window_first_and_says_so(dated: remem.Memories) -> None:
    with dated:
        result = dated.search("the importer bug from yesterday", k=5)
        assert result[0].memory.text == "Fixed the null pointer bug in the importer."
        assert len(result) == 3  # evidence, not a filter
        assert [lift.name for lift in result[0].lifts] == ["time"] and not result[1].lifts
        assert result.dates is not None and result.dates.rest == "the importer bug"
        assert any('"from yesterday" read as' in note and "dates=False" in note for note in result.notes)
        everything = dated.search("the importer bug from yesterday", k=5, dates=False)
        assert everything.dates is None and len(everything) == 3


def test_an_empty_window_is_said(dated: remem.Memories) -> None:
    with dated:
        result = dated.search("the deploy from three days ago", k=1)
        assert result[0].memory.text == "The deploy went out."
        assert result.dates is not None and result.dates.all_time
        assert any("no memory found is from then" in note for note in result.notes)


def test_explicit_since_wins_over_time_words(dated: remem.Memories) -> None:
    with dated:
        result = dated.search("importer bug yesterday", k=5, since="60d")
        assert result.dates is None and len(result) == 3


def test_context_reads_time_words_for_the_similar_ones(dated: remem.Memories) -> None:
    with dated:
        items = dated.context("importer bug from yesterday", recent=0, similar=5)
        assert items[0].memory.text == "Fixed the null pointer bug in the importer."
        assert any("read as" in note for note in dated.notes)


# --- each day's own offset, dates beyond the calendar --------------------------------------------


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Sets the process's local time zone (TZ, then tzset); the old one is back after the test."""

    def use(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield use
    monkeypatch.undo()
    time.tzset()


#: Local dates either side of 2026's changes (North America: 8 March and 1 November), and the UTC
#: hours of their midnights in New York (-5/-4), St John's (-3:30/-2:30) and Kolkata (+5:30, no DST).
AROUND_THE_CHANGES = {
    "America/New_York": {
        "2026-03-07": ("2026-03-07T05:00", "2026-03-08T05:00"),
        "2026-03-08": ("2026-03-08T05:00", "2026-03-09T04:00"),  # 23 hours
        "2026-03-09": ("2026-03-09T04:00", "2026-03-10T04:00"),
        "2026-07-04": ("2026-07-04T04:00", "2026-07-05T04:00"),
        "2026-10-31": ("2026-10-31T04:00", "2026-11-01T04:00"),
        "2026-11-01": ("2026-11-01T04:00", "2026-11-02T05:00"),  # 25 hours
        "2026-11-02": ("2026-11-02T05:00", "2026-11-03T05:00"),
        "2026-12-24": ("2026-12-24T05:00", "2026-12-25T05:00"),
    },
    "America/St_Johns": {
        "2026-03-07": ("2026-03-07T03:30", "2026-03-08T03:30"),
        "2026-03-08": ("2026-03-08T03:30", "2026-03-09T02:30"),
        "2026-07-04": ("2026-07-04T02:30", "2026-07-05T02:30"),
        "2026-11-01": ("2026-11-01T02:30", "2026-11-02T03:30"),
        "2026-11-02": ("2026-11-02T03:30", "2026-11-03T03:30"),
    },
    "Asia/Kolkata": {
        "2026-03-08": ("2026-03-07T18:30", "2026-03-08T18:30"),
        "2026-07-04": ("2026-07-03T18:30", "2026-07-04T18:30"),
        "2026-11-01": ("2026-10-31T18:30", "2026-11-01T18:30"),
    },
}


@pytest.mark.parametrize("name", list(AROUND_THE_CHANGES))
def test_each_days_window_has_that_days_offset(
    name: str, zone: Callable[[str], None], tmp_path: Path
) -> None:
    zone(name)
    with remem.open(tmp_path / "store", embedder=FakeEmbedder()) as memories:
        memories.add("The deploy went out.")
        for day, (since, until) in AROUND_THE_CHANGES[name].items():
            reading = memories.search(f"notes on {day}", k=1).dates
            assert reading is not None and reading.label == day
            window = (reading.record()["since"], reading.record()["until"])
            assert window == (f"{since}:00.000Z", f"{until}:00.000Z")
        month = memories.search("notes in March 2026", k=1).dates  # starts in winter, ends in summer
        assert month is not None and month.label == "2026-03-01 to 2026-03-31"


@pytest.mark.parametrize(
    ("name", "query"),
    [
        ("America/New_York", "notes on 9999-12-31"),
        ("America/New_York", "in December 9999"),
        ("Pacific/Kiritimati", "on 0001-01-01"),
        ("Asia/Kolkata", "since 0001-01-01"),
        ("Pacific/Kiritimati", "notes on 9999-12-31"),
    ],
)
def test_days_at_the_ends_of_the_calendar_are_searched_as_words(
    name: str, query: str, zone: Callable[[str], None], tmp_path: Path
) -> None:
    zone(name)
    with remem.open(tmp_path / "store", embedder=FakeEmbedder()) as memories:
        memories.add("The deploy went out.")
        result = memories.search(query, k=1)
        assert len(result) == 1
        if result.dates is not None:  # read only where the whole window is a time (LMT in year 1)
            assert result.dates.start.year == 1 and result.dates.record()["since"].startswith("0001-")


PLUS_14 = timezone(timedelta(hours=14))


@pytest.mark.parametrize(
    "query", ["notes on 9999-12-31", "in December 9999", "on 0001-01-01", "since 0001-01-01"]
)
def test_windows_beyond_the_calendar_are_not_read(query: str) -> None:
    assert read_dates(query, datetime(2026, 11, 30, tzinfo=PLUS_14)) is None


def test_the_days_next_to_the_ends_of_the_calendar_are_read() -> None:
    first = read_dates("on 0001-01-02", datetime(2026, 11, 30, tzinfo=PLUS_14))
    assert first is not None and first.record()["since"] == "0001-01-01T10:00:00.000Z"
    last = read_dates("on 9999-12-30", datetime(2026, 11, 30, tzinfo=timezone(timedelta(hours=-12))))
    assert last is not None and last.record()["until"] == "9999-12-31T12:00:00.000Z"


# --- --since/--until take the time words that queries take (issue 26 #6) ------------------------

#: Tuesday 2026-12-01, 06:30 in Tokyo (UTC+9), still Monday 21:30 in UTC.
TUESDAY_IN_TOKYO = datetime(2026, 11, 30, 21, 30, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("word", "local_start"),
    [
        ("yesterday", "2026-11-30"),
        ("today", "2026-12-01"),
        ("Yesterday", "2026-11-30"),
        ("monday", "2026-11-30"),  # the most recent Monday before today
        ("tuesday", "2026-11-24"),  # today is Tuesday: the one a week ago
        ("last friday", "2026-11-27"),
        ("this week", "2026-11-30"),
        ("last week", "2026-11-23"),
        ("this month", "2026-12-01"),
        ("last month", "2026-11-01"),
        ("3 days ago", "2026-11-28"),
    ],
)
def test_since_and_until_take_time_words_as_the_local_start_of_what_they_name(
    word: str, local_start: str, zone: Callable[[str], None]
) -> None:
    zone("Asia/Tokyo")
    start = (datetime.fromisoformat(local_start) - timedelta(hours=9)).isoformat() + ".000Z"
    assert remem.Filters.of(since=word, now=TUESDAY_IN_TOKYO).since == start
    assert remem.Filters.of(until=word, now=TUESDAY_IN_TOKYO).until == start


def test_since_yesterday_until_today_is_yesterday(zone: Callable[[str], None]) -> None:
    zone("Asia/Tokyo")
    window = remem.Filters.of(since="yesterday", until="today", now=TUESDAY_IN_TOKYO)
    assert (window.since, window.until) == ("2026-11-29T15:00:00.000Z", "2026-11-30T15:00:00.000Z")


@pytest.mark.parametrize("words", ["tomorrow", "next monday", "yesterday morning", "the bug from tuesday"])
def test_since_refuses_words_that_name_no_past_start_in_one_line(words: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        remem.Filters.of(since=words)
    assert str(refused.value).startswith(f"since {words!r} is neither") and "\n" not in str(refused.value)
    assert refused.value.parameter == "since"
