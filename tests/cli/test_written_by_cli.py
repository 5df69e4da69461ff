"""Who wrote a memory, through the CLI: what the CLI writes names ``cli`` (add, add --lines/--jsonl),
``remem show`` prints it (and --json, list --json), an export carries it and `remem import` keeps
it (null: unknown, kept so), naming ``import`` for records without the field (older exports);
`remem token add` refuses those names."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_cli


def _writers(store: Path) -> dict[str, str | None]:
    listed = run_cli(["list", "--json", "--limit", "100"], store)
    assert listed.code == 0, listed.stderr
    return {record["text"]: record["written_by"] for record in map(json.loads, listed.stdout.splitlines())}


def test_what_the_cli_writes_names_the_cli_and_show_says_so(store_dir: Path) -> None:
    assert run_cli(["add", "the deploy window opens at nine"], store_dir).code == 0
    assert run_cli(["add", "--lines", "-"], store_dir, stdin="one line\nanother line\n").code == 0
    jsonl = '{"text": "from a jsonl file", "written_by": "alice"}\n'
    assert run_cli(["add", "--jsonl", "-"], store_dir, stdin=jsonl).code == 0
    assert set(_writers(store_dir).values()) == {"cli"}  # a file adding through the CLI names no one else
    shown = run_cli(["show", "1"], store_dir)
    assert "written_by:    cli\n" in shown.stdout
    assert json.loads(run_cli(["show", "--json", "1"], store_dir).stdout)["written_by"] == "cli"


def test_an_import_keeps_who_wrote_each_memory_and_names_import_where_a_record_does_not_say(
    store_dir: Path, tmp_path: Path
) -> None:
    export = tmp_path / "export.jsonl"
    records = [
        {"text": "alice wrote this", "written_by": "alice"},
        {"text": "nobody is known to have written this", "written_by": None},
        {"text": "an older export's record, without the field"},
    ]
    export.write_text("".join(json.dumps(record) + "\n" for record in records))
    imported = run_cli(["import", str(export)], store_dir)
    assert imported.code == 0, imported.stderr
    assert _writers(store_dir) == {
        "alice wrote this": "alice",
        "nobody is known to have written this": None,
        "an older export's record, without the field": "import",
    }
    again = tmp_path / "again.jsonl"
    assert run_cli(["export", "-o", str(again)], store_dir).code == 0
    assert [json.loads(line)["written_by"] for line in again.read_text().splitlines()] == [
        "alice",
        None,
        "import",
    ]


def test_a_token_cannot_take_the_clis_name(store_dir: Path) -> None:
    assert run_cli(["add", "a memory"], store_dir).code == 0
    refused = run_cli(["token", "add", "--user", "alice", "--name", "cli"], store_dir)
    assert refused.code == 2 and "choose another name" in refused.stderr
