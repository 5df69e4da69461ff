"""`remem add --supersedes ID` takes memory ID's user, conversation, tags and metadata unless given
(issue 53 #2): the update is found where the old fact was filed."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_cli

OLD = "the deploy window opens at nine"
NEW = "the deploy window opens at ten"


def _record(store: Path, memory_id: str) -> dict[str, object]:
    shown = run_cli(["show", memory_id, "--json"], store)
    assert shown.code == 0, shown.stderr
    record: dict[str, object] = json.loads(shown.stdout)
    return record


def test_a_superseding_memory_keeps_what_the_old_one_was_filed_under(store_dir: Path) -> None:
    filed = ["-u", "alice", "-c", "ops", "-t", "deploy", "-m", "team=sre"]
    assert run_cli(["add", *filed, OLD], store_dir).code == 0
    added = run_cli(["add", "--supersedes", "1", NEW], store_dir)
    assert (added.code, added.stdout) == (0, "2\n"), added.stderr
    new = _record(store_dir, "2")
    assert (new["user"], new["conversation"], new["tags"], new["meta"]) == (
        "alice",
        "ops",
        ["deploy"],
        {"team": "sre"},
    )
    listed = run_cli(["list", "--json", "-u", "alice", "-t", "deploy"], store_dir)
    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == [2]


def test_given_tags_and_metadata_win(store_dir: Path) -> None:
    assert run_cli(["add", "-t", "deploy", "-m", "team=sre", OLD], store_dir).code == 0
    added = run_cli(["add", "--supersedes", "1", "-t", "window", "-m", "owner=bob", NEW], store_dir)
    assert added.code == 0, added.stderr
    new = _record(store_dir, "2")
    assert (new["tags"], new["meta"]) == (["window"], {"owner": "bob"})
