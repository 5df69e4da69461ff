"""`remem add todos.txt` when todos.txt is a file (issue 53 #2): refused, nothing stored, with one
line naming both ways — the file's contents (`remem add - < todos.txt`) or the words themselves
(`remem add --literal todos.txt`); both ways work as said."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from helpers import run_cli


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory, holding todos.txt and "my notes.txt"."""
    (tmp_path / "todos.txt").write_text("renew the TLS certificate\n", encoding="utf-8")
    (tmp_path / "my notes.txt").write_text("notes\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _texts(store: Path) -> list[str]:
    listed = run_cli(["list", "--json"], store)
    return [json.loads(line)["text"] for line in listed.stdout.splitlines()]


def test_a_text_naming_a_file_is_refused_and_nothing_is_stored(here: Path) -> None:
    store = here / "store"
    refused = run_cli(["add", "todos.txt"], store)
    assert (refused.code, refused.stdout) == (2, "")
    assert refused.stderr == (
        "Error: todos.txt is a file: to store its contents, `remem add - < todos.txt`; "
        "to store the words themselves, `remem add --literal todos.txt`\n"
    )
    assert not store.exists()
    spaced = run_cli(["add", "--json", str(here / "my notes.txt")], store)
    assert spaced.code == 2 and f"--literal {shlex.quote(str(here / 'my notes.txt'))}`" in spaced.stderr


def test_both_ways_the_error_names_work(here: Path) -> None:
    store = here / "store"
    literal = run_cli(["add", "--literal", "todos.txt"], store)
    assert (literal.code, literal.stdout, literal.stderr) == (0, "1\n", "")
    contents = run_cli(["add", "-"], store, stdin=(here / "todos.txt").read_bytes())
    assert (contents.code, contents.stdout) == (0, "2\n")
    assert _texts(store) == ["renew the TLS certificate", "todos.txt"]


@pytest.mark.parametrize("words", [["todos.txt", "is", "long"], ["no-such-file.txt"], ["."], ["-"]])
def test_other_texts_are_stored(here: Path, words: list[str]) -> None:
    added = run_cli(["add", *words], here / "store", stdin=b"from stdin")
    assert added.code == 0 and "is a file" not in added.stderr, added.stderr
