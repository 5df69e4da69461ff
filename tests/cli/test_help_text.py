"""Help that speaks the user's words (issue 53 #2): usage lines and arguments without Python types
(``TEXT <list[str]>``, ``{ID}``, ``FILE <str>``), the filter options saying what they do in each
command, and ``--json`` on every command that prints results."""

from __future__ import annotations

import re

import pytest

from helpers import run_cli

COMMANDS = [
    ["add"], ["list"], ["search"], ["context"], ["show"], ["stats"], ["edit"], ["forget"], ["export"],
    ["import"], ["reindex"], ["doctor"], ["model", "list"], ["model", "pull"], ["model", "verify"],
    ["model", "path"], ["mcp"], ["serve"], ["ui"], ["token", "add"], ["token", "list"], ["token", "revoke"],
]  # fmt: skip
#: The commands whose output is not results: servers, and export (JSON Lines by default).
NO_JSON = (["mcp"], ["serve"], ["ui"], ["export"])


def _help(command: list[str]) -> str:
    shown = run_cli([*command, "--help"])
    assert shown.code == 0, shown.stderr
    return shown.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_no_python_types_in_usage_or_arguments(command: list[str]) -> None:
    text = _help(command)
    assert not re.search(r"<(list\[|str>|int>|float>)|\{[A-Z]+\}|\[\[", text), text


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        (["edit"], "Usage: remem edit [OPTIONS] ID [TEXT]..."),
        (["import"], "Usage: remem import [OPTIONS] PATH"),
        (["model", "verify"], "Usage: remem model verify [OPTIONS] [NAME]"),
        (["forget"], "Usage: remem forget [OPTIONS] [ID]..."),
    ],
)
def test_usage_lines_as_other_tools_write_them(command: list[str], usage: str) -> None:
    assert _help(command).splitlines()[0] == usage


def _option_help(text: str, option: str) -> str:
    """The help of ``option`` (its line and the lines that continue it)."""
    found = re.search(rf"^  (?:-\w, )?{option} \S+\s+(.*(?:\n {{20,}}\S.*)*)", text, re.MULTILINE)
    assert found is not None, text
    return " ".join(found.group(1).split())


@pytest.mark.parametrize("command", [["add"], ["forget"], ["export"], ["list"], ["search"], ["context"]])
def test_filter_options_say_what_they_do_here(command: list[str]) -> None:
    text = _help(command)
    assert "search/list:" not in text
    user = _option_help(text, "--user")
    assert user == ("Whose memory it is." if command == ["add"] else "Only this user's memories.")


@pytest.mark.parametrize("command", [c for c in COMMANDS if c not in NO_JSON], ids=" ".join)
def test_every_command_that_prints_results_has_json(command: list[str]) -> None:
    assert re.search(r"^  --json\b", _help(command), re.MULTILINE), command
