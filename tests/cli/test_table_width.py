"""Tables on a terminal (issue 53 #1): the text column gets the width the other columns leave (a long
user or tag list is cut, not the text), a long text is cut at a word with ``…``, and ``--wide``
prints whole texts as a pipe gets them."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import run_cli
from remem.render import display_width

TEXT = (
    "The production database password rotates every ninety days and the vault key lives in the "
    "ops team's shared vault; ask Bob for access before the quarterly audit starts"
)
NAMED = ["-u", "alice.longname@example.com", "-t", "infrastructure", "-t", "secrets", "-t", "work"]


@pytest.fixture
def store(store_dir: Path) -> Path:
    """A store with one long memory of a long-named user with many tags, and a short one."""
    assert run_cli(["add", *NAMED, TEXT], store_dir).code == 0
    assert run_cli(["add", "short one"], store_dir).code == 0
    return store_dir


def _on_terminal(monkeypatch: pytest.MonkeyPatch, columns: int = 80) -> None:
    """Tell the commands that stdout is a terminal ``columns`` wide."""
    monkeypatch.setattr("remem.commands.common.terminal_width", lambda: columns)


def _shown_text(line: str) -> str:
    """The text cell of a table line whose text starts as TEXT does."""
    return line[line.index("The production") :]


def _cut_at_a_word(shown: str) -> bool:
    """True when ``shown`` is the start of TEXT up to a whole word, then ``…``."""
    kept = shown.removesuffix("…")
    return shown.endswith("…") and TEXT.startswith(kept) and TEXT[len(kept)] == " "


@pytest.mark.parametrize(
    "command", [["list"], ["search", "vault key"], ["search", "--mode", "vector", "vault"]]
)
def test_a_long_text_is_cut_at_a_word_to_fit_80_columns(
    store: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    _on_terminal(monkeypatch)
    shown = run_cli(command, store)
    assert shown.code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert all(display_width(line) <= 80 for line in lines), shown.stdout
    row = next(line for line in lines if "The production" in line)
    assert _cut_at_a_word(_shown_text(row)), row


def test_long_names_leave_the_text_its_room(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _on_terminal(monkeypatch)
    row = next(line for line in run_cli(["list"], store).stdout.splitlines() if "The production" in line)
    assert row.index("The production") <= 50, row  # the 26-column user and 27-column tags are cut
    assert "alice.longn…" in row and "infrastruct…" in row


@pytest.mark.parametrize("command", [["list"], ["search", "vault key"], ["show", "1", "--history"]])
def test_wide_prints_whole_texts_on_a_terminal(
    store: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    _on_terminal(monkeypatch)
    for wide in ("--wide", "-w"):
        shown = run_cli([*command, wide], store)
        assert shown.code == 0, shown.stderr
        assert TEXT in shown.stdout and "…" not in shown.stdout


def test_a_pipe_gets_whole_texts(store: Path) -> None:
    shown = run_cli(["list"], store)
    assert TEXT in shown.stdout and "alice.longname@example.com" in shown.stdout
    assert shown.stdout == run_cli(["list", "--wide"], store).stdout


@pytest.mark.slow
def test_list_in_a_real_80_column_terminal(store: Path) -> None:
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "remem", "list", "--store", str(store)],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "COLUMNS": "80", "TERM": "xterm"},
    )
    os.close(follower)
    shown = b""
    while chunk := _read(leader):
        shown += chunk
    os.close(leader)
    assert child.wait(timeout=120) == 0, shown
    lines = shown.decode().splitlines()
    assert all(display_width(line) <= 80 for line in lines), lines
    assert _cut_at_a_word(_shown_text(next(line for line in lines if "The production" in line)))


def _read(leader: int) -> bytes:
    try:
        return os.read(leader, 65536)
    except OSError:  # EIO: the child closed its end
        return b""
