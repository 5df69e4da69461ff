"""The NUL character is refused in every text, name and metadata value, on every back-end alike
(PostgreSQL cannot store it), before anything is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_cli


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["add", "-"], "a\x00b"),
        (["add", "--user", "a\x00b", "text"], None),
        (["add", "--meta", "k=a\x00b", "text"], None),
        (["add", "--tag", "a\x00b", "text"], None),
    ],
)
def test_a_nul_character_is_one_error_and_creates_nothing(
    store_dir: Path, args: list[str], stdin: str | None
) -> None:
    outcome = run_cli(args, store_dir, stdin=stdin)
    assert outcome.code == 2 and "NUL character" in outcome.stderr
    assert outcome.stderr.count("\n") == 1 and "a\x00b" not in outcome.stderr
    assert not store_dir.exists()


def test_in_a_batch_a_nul_character_is_a_bad_line(store_dir: Path) -> None:
    lines = json.dumps({"text": "a\u0000b"}) + "\n" + json.dumps({"text": "fine"}) + "\n"
    outcome = run_cli(["add", "--jsonl", "-", "--skip-invalid"], store_dir, stdin=lines)
    assert outcome.code == 0 and "skipped line 1" in outcome.stderr
    assert [json.loads(line)["text"] for line in run_cli(["export"], store_dir).stdout.splitlines()] == [
        "fine"
    ]
