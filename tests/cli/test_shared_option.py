"""``--shared``: with ``--user``, every command that filters also takes the memories with no user
(the team's); without ``--user`` it is one error line in the command line's own words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_cli

NOTES = [
    ("--user", "ann", "Ann deploys the billing service on Fridays."),
    ("--user", "bob", "Bob deploys the billing service every night."),
    ("Team rule: deploy the billing service after the migration.",),
    ("--user", "ann", "--tag", "ops", "Ann keeps the billing runbook."),
]
ANN, BOB, TEAM, ANN_OPS = 1, 2, 3, 4
COMMANDS = [
    ["list"],
    ["search", "billing service"],
    ["context", "billing service"],
    ["export"],
    ["forget", "--where", "--dry-run"],
]


@pytest.fixture
def notes(store_dir: Path) -> Path:
    for args in NOTES:
        assert run_cli(["add", *args], store_dir).code == 0
    return store_dir


def _ids(stdout: str) -> list[int]:
    return sorted(json.loads(line)["id"] for line in stdout.splitlines())


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_shared_adds_the_memories_without_a_user(notes: Path, command: list[str]) -> None:
    json_out = [] if command[0] == "export" else ["--json"]
    shared = run_cli([*command, *json_out, "--user", "ann", "--shared"], notes)
    assert shared.code == 0 and _ids(shared.stdout) == [ANN, TEAM, ANN_OPS]
    own = run_cli([*command, *json_out, "--user", "ann"], notes)
    assert own.code == 0 and _ids(own.stdout) == [ANN, ANN_OPS]
    tagged = run_cli([*command, *json_out, "--user", "bob", "--shared", "--tag", "ops"], notes)
    assert (tagged.code, tagged.stdout) == (0 if command[0] == "export" else 1, "")


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_shared_without_user_is_one_error_in_the_cli_s_words(notes: Path, command: list[str]) -> None:
    refused = run_cli([*command, "--shared"], notes)
    assert (refused.code, refused.stdout, refused.stderr) == (
        2,
        "",
        "Error: --shared needs --user: it adds the memories that have no user to that user's\n",
    )
    assert len(_ids(run_cli(["export"], notes).stdout)) == len(NOTES)  # nothing was forgotten


def test_the_help_of_each_filtering_command_shows_shared() -> None:
    for command in COMMANDS:
        shown = " ".join(run_cli([command[0], "--help"]).stdout.split())
        assert "--shared With --user: also the memories that have no user" in shown
