"""``add -``, ``edit ID -``, ``search -`` and ``context -`` read stdin only up to what a text within
the limit can take (issue 46 #9b): past it, a one-line error naming the limit, nothing changed, and
memory that does not grow with the input."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers import run_cli, run_measured
from remem.inputs import MAX_TEXT_CHARS, stdin_bound

OVER = b"a" * (stdin_bound(MAX_TEXT_CHARS) + 1)


@pytest.mark.parametrize(
    ("command", "what"),
    [
        (["add", "-"], "memory text"),
        (["edit", "1", "-"], "memory text"),
        (["search", "-"], "query"),
        (["context", "-"], "query"),
    ],
)
def test_stdin_past_the_bound_is_refused_naming_the_limit(
    store_dir: Path, command: list[str], what: str
) -> None:
    assert run_cli(["add", "the first memory"], store_dir).code == 0
    before = run_cli(["export"], store_dir).stdout
    result = run_cli(command, store_dir, stdin=OVER)
    assert result.code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert f"{what} on stdin is longer than the limit of {MAX_TEXT_CHARS:,} characters" in result.stderr
    assert ("--max-chars" in result.stderr) is (what != "query")
    assert run_cli(["export"], store_dir).stdout == before


def test_a_text_at_the_limit_with_whitespace_around_it_is_read(store_dir: Path) -> None:
    text = "é" * MAX_TEXT_CHARS  # two bytes each: the bound is in bytes, the limit in characters
    result = run_cli(["add", "-"], store_dir, stdin=f"\n\n  {text}  \n".encode())
    assert result.code == 0, result.stderr


def test_max_chars_raises_the_bound(tmp_path: Path) -> None:
    store = tmp_path / "new"
    refused = run_cli(["add", "-"], store, stdin=OVER)
    assert refused.code == 2 and not store.exists()
    raised = run_cli(["add", "--max-chars", str(len(OVER)), "-"], store, stdin=OVER)
    assert raised.code == 0, raised.stderr


@pytest.mark.slow
def test_fifty_megabytes_on_stdin_are_not_read(tmp_path: Path) -> None:
    """A real process: one line of error, exit 2, and peak memory that does not grow with the
    input: the same as for an input just past the bound (the old code read it all: +150 MB)."""
    command = [sys.executable, "-m", "remem", "add", "-", "--store", str(tmp_path / "store")]
    small, big = tmp_path / "small", tmp_path / "big"
    small.write_bytes(OVER)
    with big.open("wb") as out:
        for _ in range(50):
            out.write(b"b" * (1 << 20))
    with small.open("rb") as source:
        baseline = run_measured(command, source)
    with big.open("rb") as source:
        measured = run_measured(command, source)
    assert measured.peak_mib < baseline.peak_mib + 10, (baseline, measured)  # the old code: +130 MiB
    for child in (baseline, measured):
        assert child.code == 2 and child.stderr.count("\n") == 1, child.stderr
        assert "on stdin is longer than the limit of 100,000 characters" in child.stderr
    assert not (tmp_path / "store").exists()
