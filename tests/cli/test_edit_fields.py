"""`remem edit ID` changes tags and metadata as well as the text (issue 53 #2): --tag/--meta replace
them, --no-tags/--no-meta remove them, without a new TEXT the text stays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_cli

TEXT = "the vault key rotates every ninety days"


@pytest.fixture
def store(store_dir: Path) -> Path:
    """A store holding TEXT (memory 1), tagged security, with team=sre."""
    assert run_cli(["add", "-t", "security", "-m", "team=sre", TEXT], store_dir).code == 0
    return store_dir


def _shown(store: Path) -> dict[str, object]:
    shown = run_cli(["show", "1", "--json"], store)
    assert shown.code == 0, shown.stderr
    record: dict[str, object] = json.loads(shown.stdout)
    return record


def test_edit_tags_and_metadata_without_a_new_text(store: Path) -> None:
    edited = run_cli(["edit", "1", "-t", "ops", "--tag", "rotation", "-m", "owner=bob", "--json"], store)
    assert edited.code == 0, edited.stderr
    record = _shown(store)
    assert json.loads(edited.stdout) == record
    assert (record["text"], record["tags"], record["meta"]) == (TEXT, ["ops", "rotation"], {"owner": "bob"})
    found = run_cli(["search", "--json", "--mode", "keyword", "rotation"], store)
    assert [json.loads(line)["id"] for line in found.stdout.splitlines()] == [1]
    assert run_cli(["list", "-t", "security"], store).code == 1


def test_no_tags_and_no_meta_remove_them(store: Path) -> None:
    assert run_cli(["edit", "1", "--no-tags", "--no-meta"], store).code == 0
    record = _shown(store)
    assert (record["text"], record["tags"], record["meta"]) == (TEXT, [], {})


def test_a_new_text_and_tags_at_once(store: Path) -> None:
    assert run_cli(["edit", "1", "the vault key rotates monthly", "-t", "ops"], store).code == 0
    record = _shown(store)
    assert (record["text"], record["tags"], record["meta"]) == (
        "the vault key rotates monthly",
        ["ops"],
        {"team": "sre"},
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], "Error: give a new TEXT, --tag, --meta, --user, --no-tags, --no-meta or --no-user\n"),
        (["-t", "ops", "--no-tags"], "Error: --tag and --no-tags exclude each other: give one\n"),
        (["-m", "novalue"], "Error: --meta 'novalue' is not key=value\n"),
    ],
)
def test_a_bad_edit_is_one_line_and_changes_nothing(store: Path, arguments: list[str], message: str) -> None:
    before = _shown(store)
    refused = run_cli(["edit", "1", *arguments], store)
    assert (refused.code, refused.stderr) == (2, message)
    assert _shown(store) == before
