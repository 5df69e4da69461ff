"""One rule for naive times (issue 15 #19): a naive time is UTC, in options as in stored
``created_at`` and in the API, whatever the machine's time zone."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import remem
from helpers import run_cli
from remem.testing import FakeEmbedder


def test_since_year_one_works_in_every_time_zone(two: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        result = run_cli(["list", "--since", "0001-01-01"], two)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert result.code == 0 and len(result.stdout.splitlines()) == 3


@pytest.mark.parametrize("zone", ["Asia/Tokyo", "America/Los_Angeles"])
def test_a_naive_since_is_utc_like_a_naive_created_at(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch, zone: str
) -> None:
    import time

    lines = (
        '{"text": "before noon", "created_at": "2026-01-01T11:59"}\n'
        '{"text": "at noon", "created_at": "2026-01-01T12:00"}\n'
    )
    assert run_cli(["add", "--jsonl", "-"], store_dir, stdin=lines).code == 0
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        since = run_cli(["list", "--json", "--since", "2026-01-01T12:00"], store_dir)
        until = run_cli(["list", "--json", "--until", "2026-01-01T12:00"], store_dir)
        shown = run_cli(["list"], store_dir).stdout
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert [json.loads(line)["text"] for line in since.stdout.splitlines()] == ["at noon"]
    assert [json.loads(line)["text"] for line in until.stdout.splitlines()] == ["before noon"]
    assert "2026-01-01 12:00" in shown  # what list shows is what --since takes


def test_a_naive_datetime_filter_is_utc_in_the_api(store_dir: Path) -> None:
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        memories.add("x", created_at=datetime(2026, 1, 1, 12, 0))
        assert memories.get(1).created_at == "2026-01-01T12:00:00.000Z"
        assert len(memories.list(since=datetime(2026, 1, 1, 12, 0))) == 1
        assert memories.list(since=datetime(2026, 1, 1, 12, 0, 1)) == []
        aware = datetime(2026, 1, 1, 21, 0, tzinfo=timezone(timedelta(hours=9)))
        assert len(memories.list(since=aware)) == 1
