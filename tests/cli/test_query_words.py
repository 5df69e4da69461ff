"""`remem search`/`context` with time words, phrases and CJK, as a user types them."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from helpers import run_cli


def _noon(days_ago: int) -> str:
    local = datetime.now().astimezone().replace(hour=12, minute=0, second=0, microsecond=0)
    return (local - timedelta(days=days_ago)).isoformat()


@pytest.fixture
def store(store_dir: Path) -> Path:
    lines = [
        {"text": "Fixed the null pointer bug in the importer.", "created_at": _noon(1)},
        {"text": "The importer bug report from the customer.", "created_at": _noon(40)},
        {"text": "使用者想加強旅遊英文。", "created_at": _noon(40)},
        {"text": "会議は毎週月曜日の午前九時からです。", "created_at": _noon(40)},
    ]
    jsonl = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    assert run_cli(["add", "--jsonl", "-"], store_dir, stdin=jsonl).code == 0
    return store_dir


def test_time_words_rank_the_window_first_and_are_said(store: Path) -> None:
    out = run_cli(["search", "--json", "importer bug from yesterday"], store)
    assert out.code == 0
    hits = [json.loads(line) for line in out.stdout.splitlines()]
    assert hits[0]["text"] == "Fixed the null pointer bug in the importer."
    assert len(hits) == 4  # evidence, not a filter: the other days' memories are still found
    assert hits[0]["dates"]["phrase"] == "from yesterday"
    assert hits[0]["dates"]["query"] == "importer bug"
    assert (
        '"from yesterday" read as ' in out.stderr
        and "(local time): memories from then rank higher; --no-dates ignores them" in out.stderr
    )


def test_no_dates_and_since_search_all_time(store: Path) -> None:
    for extra in (["--no-dates"], ["--since", "90d"]):
        out = run_cli(["search", "--json", *extra, "importer bug from yesterday"], store)
        hits = [json.loads(line) for line in out.stdout.splitlines()]
        assert len(hits) == 4 and all("dates" not in hit for hit in hits)
        assert "read as" not in out.stderr


def test_an_empty_window_is_said(store: Path) -> None:
    out = run_cli(["search", "-k", "1", "importer bug report 3 days ago"], store)
    assert out.code == 0 and "The importer bug report" in out.stdout
    assert "no memory found is from then" in out.stderr


def test_context_reads_time_words(store: Path) -> None:
    out = run_cli(["context", "--recent", "0", "importer bug from yesterday"], store)
    assert out.code == 0 and "null pointer" in out.stdout.splitlines()[0]
    assert "read as" in out.stderr
    out = run_cli(["context", "--recent", "0", "--no-dates", "importer bug from yesterday"], store)
    assert out.stdout.count("\n") >= 2


@pytest.mark.parametrize(("query", "expected"), [("旅遊", "旅遊英文"), ("会議", "会議は")])
def test_cjk_words_are_found_by_keyword(store: Path, query: str, expected: str) -> None:
    out = run_cli(["search", "--mode", "keyword", "-k", "1", query], store)
    assert out.code == 0 and expected in out.stdout


@pytest.mark.parametrize("query", ["bug on 9999-12-31", "bug in December 9999", "bug since 0001-01-01"])
def test_days_beyond_the_calendar_are_words_not_errors(store: Path, query: str) -> None:
    out = run_cli(["search", "--json", "--mode", "keyword", query], store)
    assert out.code == 0 and "Error" not in out.stderr, out.stderr
    assert "importer" in out.stdout
