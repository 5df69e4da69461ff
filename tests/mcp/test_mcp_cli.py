"""`remem mcp` as a command: its help, and a one-line error when the extra is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers import run_cli


@pytest.mark.slow
def test_without_the_sdk_it_is_one_line_and_exit_2(store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if `pip install remem` without [mcp]
    outcome = run_cli(["mcp"], store_dir)
    assert (outcome.code, outcome.stdout) == (2, "")
    assert outcome.stderr == (
        "Error: remem mcp needs the MCP SDK, the mcp extra: pip install 'remem[mcp]' "
        "(from a checkout: pip install '.[mcp]')\n"
    )
    assert not store_dir.exists()


def test_help_names_the_pin_and_read_only() -> None:
    outcome = run_cli(["mcp", "--help"])
    assert outcome.code == 0
    for option in ("--user", "--conversation", "--read-only", "--store", "remem[mcp]", "'.[mcp]'"):
        assert option in outcome.stdout


def test_a_bad_pin_is_refused_before_serving(store_dir: Path) -> None:
    outcome = run_cli(["mcp", "--user", "  "], store_dir)
    assert (outcome.code, outcome.stderr) == (2, "Error: --user must not be empty\n")
