"""Time words in a query are evidence, not a filter (issue 48 #1): memories from the day a question
names rank first where they fit, yet a memory from another day that answers better still wins; only
--since/--until filter by time."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

import dated_store as day
from helpers import run_cli


@pytest.fixture
def store(store_dir: Path) -> Path:
    lines = "".join(
        json.dumps({"text": text, "created_at": when.isoformat()}) + "\n" for text, when in day.memories()
    )
    assert run_cli(["add", "--jsonl", "-"], store_dir, stdin=lines).code == 0
    return store_dir


def texts(store: Path, *args: str) -> list[str]:
    out = run_cli(["search", "--json", *args], store)
    assert out.code == 0, out.stderr
    return [json.loads(line)["text"] for line in out.stdout.splitlines()]


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_a_weekday_in_a_question_does_not_hide_the_answer(store: Path, mode: str) -> None:
    found = texts(store, "--mode", mode, "why do we not deploy on Friday")
    assert found[0] == day.DEPLOY_RULE  # written on no Friday; last Friday's lunch does not answer


def test_the_named_days_memories_rank_first_where_they_fit(store: Path) -> None:
    lunch = texts(store, "what did we order for lunch on Friday")
    assert lunch[0] == day.FRIDAY_LUNCH and day.TUESDAY_LUNCH in lunch  # first, and nothing hidden
    bug = texts(store, "the bug from Tuesday")
    assert bug[0] == day.TUESDAY_BUG and day.OLD_BUG in bug


def test_last_week_ranks_last_weeks_memories_first(store: Path) -> None:
    out = run_cli(["search", "--json", "what did the search team work on last week"], store)
    hits = [json.loads(line) for line in out.stdout.splitlines()]
    start, end = day.last_week_window()
    assert start <= datetime.fromisoformat(hits[0]["created_at"]) < end
    assert hits[0]["text"] == day.LAST_WEEK_WORK and day.OLD_WORK in [hit["text"] for hit in hits]
    assert "memories from then rank higher" in out.stderr


def test_since_and_until_still_filter(store: Path) -> None:
    friday = day.last("friday").date().isoformat()
    found = texts(store, "--since", friday, "--until", friday + "T23:59", "why do we not deploy")
    assert day.DEPLOY_RULE not in found and set(found) <= {day.FRIDAY_LUNCH, day.FRIDAY_OTHER}


def test_no_dates_reads_no_time_words(store: Path) -> None:
    out = run_cli(["search", "--json", "--no-dates", "what did we order for lunch on Friday"], store)
    hits = [json.loads(line) for line in out.stdout.splitlines()]
    assert all("dates" not in hit for hit in hits) and "read as" not in out.stderr
