"""A store used daily: memories from several days, some from the days a question names that do not
answer it (issue 48: time words in a query are evidence, not a filter)."""

from __future__ import annotations

from datetime import datetime, timedelta

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

DEPLOY_RULE = "We do not deploy on Fridays: nobody is on call over the weekend."
FRIDAY_LUNCH = "Ordered pizza for the team lunch."
TUESDAY_LUNCH = "Ordered sushi for the team lunch."
FRIDAY_OTHER = "Merged the release notes for version 3."
TUESDAY_BUG = "Fixed the bug where the session cookie expired early."
OLD_BUG = "Fixed the bug where the importer skipped empty files."
LAST_WEEK_WORK = "Wrote the quarterly planning document for the search team."
OLD_WORK = "Wrote the onboarding guide for the search team."


def noon() -> datetime:
    """Today's local noon."""
    return datetime.now().astimezone().replace(hour=12, minute=0, second=0, microsecond=0)


def last(weekday: str) -> datetime:
    """Noon of the latest ``weekday`` before today (a week ago when today is that day), as a bare
    weekday in a query reads it."""
    today = noon()
    return today - timedelta(days=(today.weekday() - WEEKDAYS.index(weekday) - 1) % 7 + 1)


def last_week_window() -> tuple[datetime, datetime]:
    """Last calendar week (Monday to Monday, local midnights), as "last week" reads it."""
    monday = noon().replace(hour=0) - timedelta(days=noon().weekday() + 7)
    return monday, monday + timedelta(days=7)


def memories() -> list[tuple[str, datetime]]:
    """(text, created_at) of the store: the lunch and the bug of each named day beside others' of
    other days, a rule about Fridays written on no Friday, work of last week and of long ago."""
    today = noon()
    return [
        (DEPLOY_RULE, today - timedelta(days=40)),
        (FRIDAY_LUNCH, last("friday")),
        (FRIDAY_OTHER, last("friday")),
        (TUESDAY_LUNCH, last("tuesday")),
        (TUESDAY_BUG, last("tuesday")),
        (OLD_BUG, today - timedelta(days=30)),
        (LAST_WEEK_WORK, last_week_window()[0] + timedelta(days=2, hours=12)),
        (OLD_WORK, today - timedelta(days=50)),
    ]
