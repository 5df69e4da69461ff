"""``remem export -f csv|markdown`` on a terminal shows members' escape sequences as visible escapes,
as list, show and search do (issue 46 #9c); to a file or a pipe the export stays byte for byte."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import tty
from pathlib import Path

import pytest

from helpers import run_cli

#: A member's text that would retitle the window, clear the screen, ring the bell, overwrite the
#: line and reverse what follows, were it written raw to a terminal.
HOSTILE = "title \x1b]0;pwned\x07 clear \x1b[2J\x1b[H back\rover \u202eesrever\x9b31m end"
RAW = ("\x1b", "\x07", "\r", "\u202e", "\x9b")
SHOWN = ("\\x1b", "\\x07", "\\u202e", "\\x9b")  # and in CSV "\\x0d" (Markdown breaks the line)


@pytest.fixture
def hostile_store(store_dir: Path) -> Path:
    """A store holding one hostile memory, in a conversation, with a tab and a line break."""
    text = f"{HOSTILE}\nsecond\tline"
    assert run_cli(["add", "--conversation", "chat", "-"], store_dir, stdin=text.encode()).code == 0
    return store_dir


def _on_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tell the export command that stdout is an 80-column terminal."""
    monkeypatch.setattr("remem.commands.transfer.terminal_width", lambda: 80, raising=False)


def _escaped(raw: str) -> str:
    """``raw`` with the hostile characters as the terminal should show them."""
    for char, escape in zip(RAW, ("\\x1b", "\\x07", "\\x0d", "\\u202e", "\\x9b"), strict=True):
        raw = raw.replace(char, escape)
    return raw


@pytest.mark.parametrize("fmt", ["csv", "markdown"])
def test_an_export_to_a_terminal_shows_escapes(
    hostile_store: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fmt: str
) -> None:
    assert run_cli(["export", "-f", fmt, "-o", str(tmp_path / "out")], hostile_store).code == 0
    _on_terminal(monkeypatch)
    shown = run_cli(["export", "-f", fmt], hostile_store)
    assert shown.code == 0 and not any(char in shown.stdout for char in RAW), repr(shown.stdout)
    assert all(escape in shown.stdout for escape in SHOWN) and "second\tline" in shown.stdout
    assert shown.stdout == _escaped((tmp_path / "out").read_bytes().decode())


@pytest.mark.parametrize("fmt", ["csv", "markdown", "jsonl"])
def test_an_export_to_a_file_or_pipe_is_left_as_it_was(
    hostile_store: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fmt: str
) -> None:
    piped = run_cli(["export", "-f", fmt], hostile_store)
    _on_terminal(monkeypatch)  # -o FILE is a file whatever stdout is
    assert run_cli(["export", "-f", fmt, "-o", str(tmp_path / "out")], hostile_store).code == 0
    written = (tmp_path / "out").read_bytes().decode()
    if fmt != "jsonl":
        kept = RAW if fmt == "csv" else [char for char in RAW if char != "\r"]  # Markdown: a line break
        assert all(char in piped.stdout and char in written for char in kept)
        assert HOSTILE in written or fmt != "csv"
    else:  # JSON Lines stays exact on a terminal too: JSON escapes what it must
        assert run_cli(["export"], hostile_store).stdout == piped.stdout == written
        assert json.loads(written)["text"].startswith(HOSTILE)


def _export_on_a_pty(store: Path, *options: str) -> bytes:
    """What a real ``remem export`` process writes to a pseudo-terminal (raw mode: bytes as written)."""
    parent, child = pty.openpty()
    tty.setraw(child)
    command = [sys.executable, "-m", "remem", "export", *options, "--store", str(store)]
    with subprocess.Popen(command, stdout=child, stderr=subprocess.PIPE) as proc:
        os.close(child)
        received = b""
        while True:
            try:
                chunk = os.read(parent, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            received += chunk
        assert proc.wait() == 0, proc.stderr.read() if proc.stderr else ""
    os.close(parent)
    return received


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["csv", "markdown"])
def test_a_real_export_on_a_pseudo_terminal_shows_escapes(hostile_store: Path, fmt: str) -> None:
    shown = _export_on_a_pty(hostile_store, "-f", fmt).decode()
    assert not any(char in shown for char in RAW), repr(shown)
    assert all(escape in shown for escape in SHOWN) and "second\tline" in shown
    piped = subprocess.run(
        [sys.executable, "-m", "remem", "export", "-f", fmt, "--store", str(hostile_store)],
        capture_output=True,
        check=True,
    )
    assert piped.stdout == run_cli(["export", "-f", fmt], hostile_store).stdout.encode()
    assert all(char.encode() in piped.stdout for char in RAW if char != "\r")
