"""`remem import --from chatgpt|claude|markdown` (issue 52), through the real CLI on both back-ends:
each message a conversation turn that `context` and search see, a repeated import adding nothing,
a newer export adding only what is new, and a bad input refused in one line with nothing imported
(also when the error comes after the first staged batches). The kill -9 and resume is in
tests/integration/test_interrupted_history_import.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from helpers import run_cli
from remem.testing import chatgpt_conversation, write_chatgpt_export

DATA = Path(__file__).parent.parent / "data" / "history"
SOURCES = {
    "chatgpt": (DATA / "chatgpt.json", 9),
    "claude": (DATA / "claude.json", 6),
    "markdown": (DATA / "notes", 6),
}


def _exported(store: Path | str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in run_cli(["export"], store).stdout.splitlines()]


@pytest.mark.parametrize("source", list(SOURCES))
def test_each_source_imports_and_says_what_it_added_and_skipped(
    either_store: Path | str, source: str
) -> None:
    path, count = SOURCES[source]
    done = run_cli(["import", "--from", source, str(path), "--user", "ann"], either_store)
    assert done.code == 0, done.stderr
    assert f"Imported from {source}: {count} new, 0 already there; skipped " in done.stderr
    records = _exported(either_store)
    assert len(records) == count and {r["user"] for r in records} == {"ann"}
    assert all(f"source:{source}" in r["tags"] and r["meta"]["source_id"] for r in records)
    assert {r["written_by"] for r in records} == {"import"}  # not "cli": another tool wrote them


def test_an_imported_chatgpt_history_is_turns_that_context_and_search_see(either_store: Path | str) -> None:
    assert run_cli(["import", "--from", "chatgpt", str(DATA / "chatgpt.json")], either_store).code == 0
    turns = [r for r in _exported(either_store) if r["conversation"] == "6650a1b2-lisbon"]
    assert [(r["role"], r["created_at"]) for r in turns[:2]] == [
        ("user", "2024-05-01T08:00:00.000Z"),
        ("assistant", "2024-05-01T08:00:20.000Z"),
    ]
    context = run_cli(
        ["context", "--conversation", "6650a1b2-lisbon", "--recent", "2", "--similar", "0"], either_store
    )
    assert context.stdout.splitlines() == [
        "[2024-05-01 08:04] (assistant) 500 dollars is about 465 euros at today's rate.",
        "[2024-05-01 08:03] (assistant) Those are azulejos, painted tin-glazed ceramic tiles.",
    ]
    found = run_cli(["search", "--json", "-k", "1", "--mode", "keyword", "Viva Viagem"], either_store)
    assert json.loads(found.stdout)["text"].startswith("The train from Rossio station")
    off_branch = run_cli(["search", "--json", "--mode", "keyword", "lovely"], either_store)
    assert off_branch.stdout == ""  # "Sintra is lovely" was on a branch the page no longer shows


def test_importing_the_same_export_again_adds_nothing(either_store: Path | str) -> None:
    for source, (path, _) in SOURCES.items():
        assert run_cli(["import", "--from", source, str(path)], either_store).code == 0
    before = _exported(either_store)
    for source, (path, count) in SOURCES.items():
        again = run_cli(["import", "--json", "--from", source, str(path)], either_store)
        assert again.code == 0 and f"Imported from {source}: 0 new, {count} already there" in again.stderr
        assert json.loads(again.stdout)["added"] == []
    assert _exported(either_store) == before


def test_a_newer_export_adds_only_what_is_new(either_store: Path | str, tmp_path: Path) -> None:
    assert run_cli(["import", "--from", "chatgpt", str(DATA / "chatgpt.json")], either_store).code == 0
    conversations = json.loads((DATA / "chatgpt.json").read_text(encoding="utf-8"))
    garden = conversations[1]
    garden["mapping"]["b1"]["children"] = ["q2"]
    garden["mapping"]["q2"] = {
        "id": "q2",
        "parent": "b1",
        "children": [],
        "message": {
            "id": "q2",
            "author": {"role": "user"},
            "create_time": 1717229000.0,
            "content": {"content_type": "text", "parts": ["And the basil?"]},
        },
    }
    garden["current_node"] = "q2"
    conversations.append(chatgpt_conversation(7, 2))
    newer = tmp_path / "conversations.json"
    newer.write_text(json.dumps(conversations), encoding="utf-8")
    done = run_cli(["import", "--from", "chatgpt", str(newer)], either_store)
    assert done.code == 0 and "Imported from chatgpt: 3 new, 9 already there" in done.stderr
    assert [r["text"] for r in _exported(either_store)][9:] == [
        "And the basil?",
        *(
            t["message"]["content"]["parts"][0]
            for n, t in chatgpt_conversation(7, 2)["mapping"].items()
            if n != "root"
        ),
    ]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--from", "chatgpt", str(DATA / "claude.json")],
            "[0] has no mapping of messages: not a ChatGPT export",
        ),
        (["--from", "claude", str(DATA)], "a directory; --from claude reads the export's conversations.json"),
        (
            ["--from", "markdown", str(DATA / "claude.json")],
            "not a directory; --from markdown reads a folder",
        ),
        (
            ["--from", "chatgpt", "--skip-invalid", str(DATA / "chatgpt.json")],
            "--skip-invalid is for remem's own",
        ),
        (["--user", "ann", str(DATA / "chatgpt.json")], "--user is for --from chatgpt, claude or markdown"),
    ],
)
def test_a_bad_input_is_one_line_and_creates_no_store(store_dir: Path, args: list[str], says: str) -> None:
    refused = run_cli(["import", *args], store_dir)
    assert refused.code == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith("Error: ") and says in refused.stderr
    assert not store_dir.exists()


def test_an_export_truncated_after_its_first_batches_imports_nothing(
    either_store: Path | str, tmp_path: Path
) -> None:
    """Past the first 10,000 turns the store is open and batches are staged: the error still
    leaves nothing imported, and the whole export (the file completed) imports after it."""
    path = tmp_path / "conversations.json"
    total = write_chatgpt_export(path, 10_400)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - 3000])
    refused = run_cli(["import", "--from", "chatgpt", str(path)], either_store)
    assert refused.code == 2 and "a truncated file?" in refused.stderr and str(path) in refused.stderr
    assert refused.stderr.strip().splitlines()[-1].startswith("Error: ")
    assert _exported(either_store) == []
    path.write_bytes(whole)
    done = run_cli(["import", "--from", "chatgpt", str(path)], either_store)
    assert done.code == 0 and f"Imported from chatgpt: {total:,} new, 0 already there" in done.stderr
    assert "Resumed an interrupted ingest" in done.stderr
