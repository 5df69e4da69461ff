"""An argument that starts with ``-`` taken for an option (issue 53 #2): the error names the command
that passes it — ``--`` just before it, what came before kept — and that command works."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from helpers import run_cli


def _suggested(stderr: str) -> list[str]:
    """The arguments of the command the hint names (after ``remem``)."""
    found = re.search(r"put -- before it: (remem [^)]*)\)$", stderr.strip())
    assert found is not None, stderr
    return shlex.split(found.group(1))[1:]


@pytest.fixture
def store(store_dir: Path) -> Path:
    """A store holding memory 1."""
    assert run_cli(["add", "the deploy flag is -n prod"], store_dir).code == 0
    return store_dir


def _run(store: Path, argv: list[str]) -> tuple[int, str, str]:
    outcome = run_cli(["--store", str(store), *argv])
    return outcome.code, outcome.stdout, outcome.stderr


def test_a_query_that_starts_with_a_dash(store: Path) -> None:
    code, _, stderr = _run(store, ["search", "-n prod"])
    assert code == 2
    assert stderr == (
        "Error: No such option: -n (to pass '-n prod' as an argument, put -- before it: "
        "remem search -- '-n prod')\n"
    )
    command, *rest = _suggested(stderr)
    code, stdout, _ = _run(store, [command, "--json", *rest])
    assert code == 0 and [json.loads(line)["id"] for line in stdout.splitlines()] == [1]


def test_edit_to_a_negative_number_keeps_the_id(store: Path) -> None:
    code, _, stderr = _run(store, ["edit", "1", "-1"])
    assert code == 2 and _suggested(stderr) == ["edit", "1", "--", "-1"]
    code, _, stderr = _run(store, _suggested(stderr))
    assert code == 0, stderr
    assert json.loads(_run(store, ["show", "1", "--json"])[1])["text"] == "-1"


def test_add_of_a_negative_number_keeps_the_words_after_it(store: Path) -> None:
    code, _, stderr = _run(store, ["add", "-5", "degrees", "tonight"])
    assert code == 2 and _suggested(stderr) == ["add", "--", "-5", "degrees", "tonight"]
    code, stdout, stderr = _run(store, _suggested(stderr))
    assert (code, stdout) == (0, "2\n"), stderr
    assert json.loads(_run(store, ["show", "2", "--json"])[1])["text"] == "-5 degrees tonight"


def test_a_mistyped_option_gets_no_dash_hint(store: Path) -> None:
    code, _, stderr = _run(store, ["search", "--limt", "3", "deploy"])
    assert code == 2 and "--limit" in stderr and "put -- before it" not in stderr
    code, _, stderr = _run(store, ["list", "-n"])
    assert code == 2 and "put -- before it" not in stderr


def test_the_hint_shows_control_characters_as_escapes(store: Path) -> None:
    code, _, stderr = _run(store, ["search", "-n \x1b[2Jprod"])
    assert code == 2 and "\x1b" not in stderr and "'-n \\x1b[2Jprod'" in stderr
