"""`remem edit ID --user NAME` / `--no-user` moves a memory to another user (issue 53 #2); a move the
store refuses (the user holds that text already, a conversation's turn, a chain of replaced
memories) is one error line that names what is in the way, exit 2, and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import one_error, run_cli

TEXT = "the vault key rotates every ninety days"


@pytest.fixture
def store(store_dir: Path) -> Path:
    """A store holding TEXT as alice's memory 1."""
    assert run_cli(["add", "-u", "alice", "-t", "security", TEXT], store_dir).code == 0
    return store_dir


def _user(store: Path, memory_id: int) -> object:
    shown = run_cli(["show", str(memory_id), "--json"], store)
    assert shown.code == 0, shown.stderr
    return json.loads(shown.stdout)["user"]


def test_edit_moves_a_memory_to_another_user_and_back_to_none(store: Path) -> None:
    moved = run_cli(["edit", "1", "--user", "bob", "--json"], store)
    assert moved.code == 0, moved.stderr
    record = json.loads(moved.stdout)
    assert (record["user"], record["text"], record["tags"]) == ("bob", TEXT, ["security"])
    assert run_cli(["list", "-u", "alice"], store).code == 1
    listed = run_cli(["list", "-u", "bob", "--json"], store)
    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == [1]
    assert run_cli(["edit", "1", "--no-user"], store).code == 0
    assert _user(store, 1) is None


def test_a_refused_move_names_what_is_in_the_way_and_changes_nothing(store: Path) -> None:
    assert run_cli(["add", "-u", "bob", TEXT], store).stdout.strip() == "2"
    held = run_cli(["edit", "1", "-u", "bob", "-t", "moved"], store)
    assert held.code == 2
    one_error(held.stderr, "user 'bob' already holds this text as memory 2; not moved")
    assert TEXT not in held.stderr  # a memory's text is not shown in an error about something else
    turn = run_cli(["add", "-u", "alice", "-c", "support-42", "--role", "user", "I was charged twice"], store)
    assert turn.code == 0
    refused = run_cli(["edit", turn.stdout.strip(), "-u", "bob"], store)
    assert refused.code == 2
    one_error(refused.stderr, "is a turn of conversation 'support-42'")
    both = run_cli(["edit", "1", "-u", "bob", "--no-user"], store)
    assert both.code == 2
    one_error(both.stderr, "--user and --no-user exclude each other")
    assert _user(store, 1) == "alice" and json.loads(run_cli(["show", "1", "--json"], store).stdout)[
        "tags"
    ] == ["security"]
