"""Exit codes a script can trust when the reader of stdout goes away or the user presses Ctrl-C
(issue 15 #2, #3): real processes, real pipes, real signals."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import remem
from remem.testing import FakeEmbedder

REMEM = [sys.executable, "-m", "remem"]


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store whose export is far larger than a pipe's buffer (no model needed to read it)."""
    store = tmp_path_factory.mktemp("pipes") / "store"
    with remem.open(store, embedder=FakeEmbedder()) as memories:
        memories.add_many(f"memory {i} about the {i % 7} rollout " + "x" * 200 for i in range(3000))
    return store


@pytest.mark.parametrize(
    "args",
    [
        ["export"],
        ["export", "-f", "csv"],
        ["export", "-f", "markdown"],
        ["list", "-k", "3000"],
        ["context", "--recent", "3000", "--similar", "0"],
    ],
)
@pytest.mark.slow
def test_a_reader_that_stops_early_is_not_a_failure(big_store: Path, args: list[str]) -> None:
    """`remem export | head -1` exits 0 and prints nothing on stderr, like `list` always did."""
    writer = subprocess.Popen(
        [*REMEM, *args, "--store", str(big_store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert writer.stdout is not None and writer.stderr is not None
    first = writer.stdout.readline()
    writer.stdout.close()  # what `head -1` does after its line
    code = writer.wait(timeout=60)
    assert first and (code, writer.stderr.read()) == (0, b"")


@pytest.mark.slow
def test_ctrl_c_says_interrupted_and_exits_130(tmp_path: Path) -> None:
    """`remem add -` waiting on stdin, then SIGINT: exit 130 with one `Interrupted.` line."""
    waiting = subprocess.Popen(
        [*REMEM, "add", "-", "--store", str(tmp_path / "store")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # A test run started in the background inherits SIGINT ignored (POSIX, for asynchronous
        # commands), and Python then never raises KeyboardInterrupt: give the child the default.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )
    time.sleep(1.5)  # it is reading stdin by now
    waiting.send_signal(signal.SIGINT)
    out, err = waiting.communicate(timeout=30)
    assert (waiting.returncode, out, err) == (130, b"", b"Interrupted.\n")
