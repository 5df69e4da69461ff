"""`remem add` in a real terminal (issue 26 #4): a short text leaves no progress bar behind; a long
one still shows its progress. The real CLI and the real model in a child on a pseudo-terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

REMEM = [sys.executable, "-m", "remem"]


def _in_terminal(args: list[str], stdin: bytes | None = None) -> tuple[int, str]:
    """Run remem with stdout and stderr on a pseudo-terminal; its exit code and all it showed there."""
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [*REMEM, *args],
        stdin=subprocess.PIPE if stdin is not None else follower,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "COLUMNS": "100", "TERM": "xterm"},
    )
    os.close(follower)
    if stdin is not None:
        assert child.stdin is not None
        child.stdin.write(stdin)
        child.stdin.close()
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    return child.wait(timeout=300), shown.decode("utf-8", "replace")


@pytest.mark.slow
def test_a_short_add_leaves_no_progress_bar_on_the_terminal(tmp_path: Path) -> None:
    code, shown = _in_terminal(["add", "the deploy moved to Thursday", "--store", str(tmp_path / "s")])
    assert code == 0, shown
    assert "Embedding" not in shown and "1" in shown


@pytest.mark.slow
def test_a_long_add_still_shows_its_progress(tmp_path: Path) -> None:
    long_text = " ".join(f"line {i} of a long design note about the rollout." for i in range(1500))
    assert len(long_text) > 50_000
    code, shown = _in_terminal(["add", "-", "--store", str(tmp_path / "s")], stdin=long_text.encode())
    assert code == 0, shown
    assert "Embedding" in shown and "100%" in shown, shown[-300:]


@pytest.mark.slow
def test_a_chat_import_shows_its_progress(tmp_path: Path) -> None:
    from remem.testing import write_chatgpt_export

    export = tmp_path / "conversations.json"
    write_chatgpt_export(export, 300)
    code, shown = _in_terminal(["import", "--from", "chatgpt", str(export), "--store", str(tmp_path / "s")])
    assert code == 0, shown
    assert "Embedding" in shown and "100%" in shown, shown[-300:]
    assert "Imported from chatgpt: 300 new" in shown
