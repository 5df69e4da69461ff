"""Bulk ingest, lossless export/import, CSV/Markdown, context, stats, show — through the CLI."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import run_cli


def _export(store: Path, *args: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in run_cli(["export", *args], store).stdout.splitlines()]


def test_ten_thousand_lines_through_add_lines(store_dir: Path, tmp_path: Path) -> None:
    lines = [
        f"bulk memory {i}: the build of service {i % 97} finished in {i % 13} minutes" for i in range(10_000)
    ]
    source = tmp_path / "lines.txt"
    source.write_text(
        "\n".join(lines[:5000]) + "\n\n   \n" + "\n".join(lines[5000:]) + "\n" + lines[0] + "\n"
    )
    result = run_cli(["add", "--lines", str(source), "--tag", "bulk", "--json"], store_dir)
    assert result.code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (len(report["added"]), report["duplicates"], report["skipped_lines"]) == (10_000, [1], [])
    assert "Added 10000, duplicates 1, skipped 0." in result.stderr
    again = run_cli(["add", "--lines", str(source), "--json"], store_dir)
    assert json.loads(again.stdout)["added"] == [] and len(json.loads(again.stdout)["duplicates"]) == 10_001
    assert len(_export(store_dir, "--tag", "bulk")) == 10_000
    top = json.loads(run_cli(["search", "--json", "-k", "1", "bulk memory 4242"], store_dir).stdout)
    assert top["text"] == lines[4242]


BAD_JSONL = [
    (b'{"text": "fine"}\n{"text": "broken"\n', "line 2: invalid JSON"),
    (b'{"text": "fine"}\n{"user": "ann"}\n', "line 2: missing text"),
    (b'{"text": "fine"}\n{"text": "   "}\n', "line 2: text is empty"),
    (b'{"text": "fine"}\n{"text": ["a"]}\n', "line 2: text must be a string"),
    (b'{"text": "fine"}\n{"text": "x", "tags": "a,b"}\n', "line 2: tags must be a list of strings"),
    (b'{"text": "fine"}\n{"text": "x", "meta": {"n": 1}}\n', "line 2: meta must be an object whose values"),
    (
        b'{"text": "fine"}\n{"text": "x", "created_at": "yesterday"}\n',
        "line 2: created_at 'yesterday' is not",
    ),
    (b'{"text": "fine"}\n{"text": "x", "user": 7}\n', "line 2: user must be a string or null"),
    (b'{"text": "fine"}\n"just a string"\n', "line 2: not a JSON object"),
    (b'{"text": "fine"}\n{"text": "caf\xe9"}\n', "line 2: not valid UTF-8"),
]


@pytest.mark.parametrize(("data", "message"), BAD_JSONL)
def test_a_bad_jsonl_line_is_named_and_nothing_is_written(store_dir: Path, data: bytes, message: str) -> None:
    result = run_cli(["add", "--jsonl", "-"], store_dir, stdin=data)
    assert result.code == 2 and message in result.stderr and result.stderr.count("\n") == 1
    assert run_cli(["list"], store_dir).code == 1
    skipped = run_cli(["add", "--jsonl", "-", "--skip-invalid", "--json"], store_dir, stdin=data)
    assert skipped.code == 0 and f"Warning: skipped {message}" in skipped.stderr
    assert json.loads(skipped.stdout)["skipped_lines"] == [2]
    assert [r["text"] for r in _export(store_dir)] == ["fine"]


def test_bad_lines_input(store_dir: Path) -> None:
    result = run_cli(["add", "--lines", "-"], store_dir, stdin=b"good\n\xff\xfe bad\nalso good\n")
    assert result.code == 2 and "line 2: not valid UTF-8" in result.stderr
    assert run_cli(["add", "--lines", "/no/such/file"], store_dir).stderr.startswith(
        "Error: cannot read /no/such/file"
    )
    both = run_cli(["add", "--lines", "-", "--jsonl", "-"], store_dir, stdin=b"x\n")
    assert both.code == 2 and "only one" in both.stderr
    assert run_cli(["add", "text", "--lines", "-"], store_dir, stdin=b"x\n").code == 2


def test_jsonl_fields_and_cli_defaults(store_dir: Path) -> None:
    data = (
        b'{"text": "with everything", "user": "ann", "conversation": "c1", "role": "user", '
        b'"tags": ["b", "a"], "meta": {"k": "v"}, "created_at": "2025-03-04T05:06:07+02:00"}\n'
        b'{"text": "with defaults only"}\n'
    )
    assert run_cli(["add", "--jsonl", "-", "--user", "dflt", "--tag", "t"], store_dir, stdin=data).code == 0
    first, second = _export(store_dir)
    assert (first["user"], first["tags"], first["meta"]) == ("ann", ["a", "b"], {"k": "v"})
    assert first["created_at"] == "2025-03-04T03:06:07.000Z"
    assert (second["user"], second["tags"]) == ("dflt", ["t"])


KILL_INGEST = (
    "import sys; from remem.cli import main; "
    "sys.exit(main(['add', '--lines', sys.argv[1], '--store', sys.argv[2]]))"
)


@pytest.mark.slow
def test_an_interrupted_ingest_leaves_all_or_nothing(store_dir: Path, tmp_path: Path) -> None:
    source = tmp_path / "lines.txt"
    source.write_text("\n".join(f"interrupted ingest line {i}" for i in range(3000)) + "\n")
    assert run_cli(["add", "one memory before the ingest"], store_dir).code == 0
    for delay in (0.5, 1.5, 3.0):
        process = subprocess.Popen([sys.executable, "-c", KILL_INGEST, str(source), str(store_dir)])
        time.sleep(delay)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
        count = len(_export(store_dir))
        assert count in (1, 3001), count
    assert run_cli(["doctor"], store_dir).code == 0


@pytest.mark.parametrize("with_vectors", [False, True])
def test_export_import_export_round_trips_exactly(varied: Path, tmp_path: Path, with_vectors: bool) -> None:
    args = ["export", *(["--with-vectors"] if with_vectors else [])]
    first = run_cli(args, varied).stdout
    target = tmp_path / "copy"
    imported = run_cli(["import", "-", "--json"], target, stdin=first.encode())
    assert imported.code == 0, imported.stderr
    assert json.loads(imported.stdout)["added"] == [1, 3, 4]
    assert ("3 vectors reused" in imported.stderr) is with_vectors
    assert run_cli(args, target).stdout == first
    again = run_cli(["import", "-"], target, stdin=first.encode())
    assert "Added 0, duplicates 3" in again.stderr


def test_import_reembeds_vectors_of_another_model(varied: Path, tmp_path: Path) -> None:
    records = [json.loads(line) for line in run_cli(["export", "--with-vectors"], varied).stdout.splitlines()]
    for record in records:
        record["vector"]["model"]["name"] = "some-other-model"
    data = "\n".join(json.dumps(r) for r in records).encode()
    result = run_cli(["import", "-"], tmp_path / "copy", stdin=data)
    assert result.code == 0 and "vectors reused" not in result.stderr
    hit = json.loads(run_cli(["search", "--json", "-k", "1", "conversation"], tmp_path / "copy").stdout)
    assert hit["text"] == "no conversation at all"


def test_import_rejects_a_tampered_export(varied: Path, tmp_path: Path) -> None:
    records = [json.loads(line) for line in run_cli(["export"], varied).stdout.splitlines()]
    records[1]["text"] = "changed after export"
    result = run_cli(["import", "-"], tmp_path / "copy", stdin="\n".join(map(json.dumps, records)).encode())
    assert result.code == 2 and "line 2: sha256 does not match the text" in result.stderr


def test_an_export_records_the_hash_of_its_stored_text_trimmed(varied: Path, tmp_path: Path) -> None:
    """A stored text never has invisible edges, so an export's sha256 is of the trimmed text: a record
    hashing its text with a zero-width edge (as a pre-release remem stored it) is refused."""
    records = [json.loads(line) for line in run_cli(["export"], varied).stdout.splitlines()]
    edged = "\u200b" + str(records[1]["text"])
    records[1].update(text=edged, sha256=hashlib.sha256(edged.encode()).hexdigest())
    result = run_cli(["import", "-"], tmp_path / "copy", stdin="\n".join(map(json.dumps, records)).encode())
    assert result.code == 2 and "line 2: sha256 does not match the text" in result.stderr
    records[1].pop("sha256")  # without a hash the text is taken, trimmed
    assert (
        run_cli(["import", "-"], tmp_path / "copy", stdin="\n".join(map(json.dumps, records)).encode()).code
        == 0
    )
    assert str(_export(tmp_path / "copy")[1]["text"]) == edged[1:]


def test_csv_is_safe_for_spreadsheets_and_filters_apply(varied: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(run_cli(["export", "-f", "csv"], varied).stdout)))
    assert [r["id"] for r in rows] == ["1", "3", "4"]
    assert rows[0]["text"] == '\'=HYPERLINK("http://evil")'
    assert rows[1]["text"] == 'multi\nline, with "quotes" (edited)' and rows[1]["user"] == "ann"
    only_c1 = list(csv.DictReader(io.StringIO(run_cli(["export", "-f", "csv", "-c", "c1"], varied).stdout)))
    assert [r["id"] for r in only_c1] == ["1", "3"]
    assert run_cli(["export", "-f", "csv", "--with-vectors"], varied).code == 2


def test_markdown_groups_by_conversation(varied: Path) -> None:
    markdown = run_cli(["export", "-f", "markdown"], varied).stdout
    assert markdown.index("## Conversation: c1") < markdown.index("**#1**") < markdown.index("**#3**")
    assert markdown.index("## No conversation") < markdown.index("**#4**")
    assert "user: ann" in markdown and "  line, with" in markdown


def test_context_merges_recent_and_similar(varied: Path) -> None:
    for how, expected_first in (("append", "recent"), ("prepend", "similar"), ("interleave", "recent")):
        result = run_cli(
            ["context", "--recent", "2", "--similar", "2", "--merge", how, "--json", "quotes"], varied
        )
        records = [json.loads(line) for line in result.stdout.splitlines()]
        assert records[0]["source"] == expected_first
        assert len({r["id"] for r in records}) == len(records)  # each memory once
    text = run_cli(["context", "--recent", "1", "--similar", "0"], varied).stdout
    assert text.startswith("[20") and "(user, ann)" in text and "multi line" in text
    assert run_cli(["context", "--recent", "0", "--similar", "0", "x"], varied).code == 1


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["context"], b"", "query is empty"),
        (["context", "--min-score", "2", "q"], None, "--min-score must be between 0 and 1"),
        (["context", "--recent", "-1", "q"], None, "--recent"),
        (["context", "--merge", "zip", "q"], None, "--merge"),
        (["show", "abc"], None, "Invalid value for 'ID'"),
        (["import", "/no/such/export.jsonl"], None, "cannot read /no/such/export.jsonl"),
        (["import", "-"], b'{"id": 0, "text": "x"}\n', "line 1: id must be a positive integer"),
        (["import", "-"], b'{"text": "x", "vector": {"model": {}}}\n', "line 1: vector must be"),
        (["export", "--format", "xml"], None, "--format"),
        (["export", "--since", "soon"], None, "--since 'soon' is neither"),
    ],
)
def test_bad_inputs_of_context_show_import_export(
    varied: Path, args: list[str], stdin: bytes | None, message: str
) -> None:
    before = run_cli(["export"], varied).stdout
    result = run_cli(args, varied, stdin=stdin)
    assert result.code == 2 and result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
    assert message in result.stderr, result.stderr
    assert run_cli(["export"], varied).stdout == before
