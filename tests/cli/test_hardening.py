"""Settings and imports that must not break a store (issue 15 #12, #13, #14): each refused or
repaired before anything is saved."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from helpers import run_cli
from remem.testing import FAKE_DIM, fake_vector


@pytest.fixture
def small(store_dir: Path) -> Path:
    for text in ("the kitchen sink leaks", "the garden gate squeaks", "the attic window sticks"):
        assert run_cli(["add", text], store_dir).code == 0
    return store_dir


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ef-search", "1099511627776"], "--ef-search must be at least 2 and at most 65536"),
        (["--hnsw-m", "100000000"], "--hnsw-m must be at least 2 and at most 128"),
        (["--hnsw-m", "0"], "--hnsw-m must be at least 2"),
        (["--ef-search", "0"], "--ef-search must be at least 2"),
        (["--ef-construction", "5000"], "--ef-construction must be at least 2 and at most 4096"),
    ],
)
def test_hnsw_settings_out_of_bounds_are_refused_before_anything_is_saved(
    small: Path, args: list[str], message: str
) -> None:
    before = run_cli(["stats", "--json"], small).stdout
    result = run_cli(["reindex", "--index", "hnsw", *args], small)
    assert result.code == 2 and message in result.stderr and result.stderr.count("\n") == 1
    assert run_cli(["stats", "--json"], small).stdout == before  # index setting unchanged
    assert run_cli(["search", "leaking sink"], small).code == 0
    assert run_cli(["doctor"], small).code == 0


def _exported(store: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in run_cli(["export", "--with-vectors"], store).stdout.splitlines()]


@pytest.mark.parametrize("damage", ["scaled", "nan"])
def test_an_imported_vector_that_is_not_a_unit_vector_is_embedded_again(
    small: Path, tmp_path: Path, damage: str
) -> None:
    records = _exported(small)
    vector = fake_vector(str(records[0]["text"])) * (1000.0 if damage == "scaled" else np.nan)
    records[0]["vector"]["float32_base64"] = base64.b64encode(vector.astype("<f4").tobytes()).decode()  # type: ignore[index]
    target = tmp_path / "copy"
    data = "".join(json.dumps(record) + "\n" for record in records)
    imported = run_cli(["import", "--json", "-"], target, stdin=data)
    assert imported.code == 0 and "2 vectors reused" in imported.stderr
    hits = [
        json.loads(line)
        for line in run_cli(
            ["search", "--json", "--mode", "vector", "-k", "3", "x"], target
        ).stdout.splitlines()
    ]
    assert all(-1.0 <= float(hit["score"]) <= 1.0 for hit in hits)  # type: ignore[arg-type]
    assert run_cli(["doctor"], target).code == 0


def test_doctor_finds_vectors_that_are_not_unit_length(small: Path) -> None:
    import sqlite3

    with sqlite3.connect(small / "memories.sqlite3") as conn:
        conn.execute("UPDATE vectors SET vector = ? WHERE id = 1", (np.full(FAKE_DIM, 3.0, "<f4").tobytes(),))
    result = run_cli(["doctor"], small)
    assert result.code == 2 and "1 vectors not finite or not of unit length" in result.stdout


@pytest.mark.parametrize("memory_id", [9223372036854775807, 9223372036854775808, 2**53, 0, -3])
def test_an_imported_id_out_of_range_is_a_bad_line(store_dir: Path, memory_id: int) -> None:
    line = json.dumps({"id": memory_id, "text": "from another store"}) + "\n"
    refused = run_cli(["import", "-"], store_dir, stdin=line)
    assert refused.code == 2
    assert "line 1: id must be a positive integer up to 9007199254740991" in refused.stderr
    skipped = run_cli(["import", "--skip-invalid", "-"], store_dir, stdin=line)
    assert skipped.code == 0 and "skipped 1" in skipped.stderr
    assert run_cli(["add", "a later memory"], store_dir).code == 0  # ids still come


def test_the_largest_id_an_import_may_carry_leaves_room_for_more(store_dir: Path) -> None:
    line = json.dumps({"id": 2**53 - 1, "text": "from another store"}) + "\n"
    assert run_cli(["import", "-"], store_dir, stdin=line).code == 0
    assert run_cli(["add", "a later memory"], store_dir).stdout.strip() == str(2**53)


def test_a_failed_index_save_after_the_commit_is_a_warning_not_a_failure(small: Path) -> None:
    """Issue 15 #1: SQLite (the truth) committed the change, so the command reports what it did and
    exits 0; the unwritable index file is a warning and is caught up later."""
    (small / "vectors.faiss").unlink()
    (small / "vectors.faiss").mkdir()  # stands for a full disk: the file cannot be written
    added = run_cli(["add", "the cellar door creaks"], small)
    assert (added.code, added.stdout) == (0, "4\n")
    assert "Warning: cannot write" in added.stderr and "the change is saved" in added.stderr
    assert run_cli(["edit", "1", "the kitchen sink is fixed"], small).code == 0
    assert run_cli(["forget", "2"], small).code == 0
    texts = [json.loads(line)["text"] for line in run_cli(["export"], small).stdout.splitlines()]
    assert texts == ["the kitchen sink is fixed", "the attic window sticks", "the cellar door creaks"]
    assert json.loads(run_cli(["search", "--json", "-k", "1", "cellar door"], small).stdout)["id"] == 4
    (small / "vectors.faiss").rmdir()
    assert run_cli(["doctor", "--repair"], small).code == 0
    assert run_cli(["doctor"], small).code == 0


HOSTILE = (
    "title\x1b]0;pwned\x07 link \x1b]8;;http://evil\x1b\\here\x1b]8;;\x1b\\"
    " clear\x1b[2J back\x08\x08 cr\rover \x9b31m"
)


def test_terminal_escapes_in_a_memory_are_shown_not_obeyed(store_dir: Path) -> None:
    """Issue 15 #9: ESC/CSI/OSC, BEL, backspace, CR and C1 bytes reach human output as visible
    escapes; --json stays exact."""
    assert run_cli(["add", "--user", "ann", "--tag", "t", HOSTILE], store_dir).code == 0
    for args in (["list"], ["search", "title"], ["show", "1"], ["context", "title"], ["stats"]):
        shown = run_cli(args, store_dir).stdout
        assert not any(char in shown for char in "\x1b\x07\x08\r\x9b"), (args, shown)
    assert "\\x1b]0;pwned\\x07" in run_cli(["list"], store_dir).stdout
    assert json.loads(run_cli(["show", "--json", "1"], store_dir).stdout)["text"] == HOSTILE


def test_invisible_formatting_in_text_is_shown_and_refused_in_names(store_dir: Path) -> None:
    """A bidi override makes "\\u202enimda" look like "admin": escaped in text, refused in names."""
    assert run_cli(["add", "ask \u202enimda for\u200bthe key"], store_dir).code == 0
    listed = run_cli(["list"], store_dir).stdout
    assert "\u202e" not in listed and "\\u202enimda" in listed and "\\u200b" in listed
    refused = run_cli(["add", "--user", "\u202enimda", "hello"], store_dir)
    assert refused.code == 2 and "invisible formatting characters" in refused.stderr
    assert run_cli(["add", "--tag", "ok\u200b", "hello"], store_dir).code == 2
    family = run_cli(["add", "family 👨\u200d👩\u200d👧 photo"], store_dir)
    assert family.code == 0 and "👨\u200d👩\u200d👧" in run_cli(["list"], store_dir).stdout


def test_a_bare_cr_cannot_start_a_csv_row_or_a_markdown_block(store_dir: Path) -> None:
    """Issue 15 #10: a CR inside a text stays inside its quoted CSV cell (no unguarded `=cmd` cell
    of its own); in Markdown no line of a memory can forge a heading, a list item or a link."""
    import csv
    import io

    text = "harmless\r=cmd|' /C calc'!A0\r# Forged heading\r- forged item\n[click](javascript:alert(1))"
    assert run_cli(["add", "--conversation", "c1 [x](http://e)", text], store_dir).code == 0
    exported = run_cli(["export", "-f", "csv"], store_dir).stdout
    assert '"harmless\r=cmd' in exported  # quoted: one cell
    (row,) = csv.DictReader(io.StringIO(exported, newline=""))
    assert row["text"] == text
    markdown = run_cli(["export", "-f", "markdown"], store_dir).stdout
    lines = markdown.splitlines()
    assert "## Conversation: c1 \\[x\\](http://e)" in lines
    assert not [line for line in lines if line.lstrip().startswith(("# F", "- forged", "[click"))]
    assert "  \\# Forged heading" in lines and "  \\- forged item" in lines


@pytest.mark.parametrize("source", ["argument", "stdin", "lines", "jsonl"])
def test_a_bom_and_zero_width_edges_are_trimmed_and_alone_are_empty(store_dir: Path, source: str) -> None:
    """Issue 15 #21: a UTF-8 file's BOM or zero-width characters at the edges are not text."""
    text, blank = "\ufeff\u200bthe heater is set to 21 degrees\u200b", "\ufeff \u200b\u2060"
    data = {"jsonl": json.dumps({"text": text}) + "\n"}.get(source, text + "\n")
    args = {"argument": ["add", text], "stdin": ["add", "-"], "lines": ["add", "--lines", "-"]}
    added = run_cli(args.get(source, ["add", "--jsonl", "-"]), store_dir, stdin=data)
    assert added.code == 0, added.stderr
    assert json.loads(run_cli(["show", "--json", "1"], store_dir).stdout)["text"] == (
        "the heater is set to 21 degrees"
    )
    assert run_cli(["add", blank], store_dir).code == 2
    assert run_cli(["add", "-"], store_dir, stdin=blank).code == 2


def test_export_output_never_goes_through_a_planted_file_and_never_into_the_store(
    small: Path, tmp_path: Path
) -> None:
    """Issue 15 #7: the temp file is unpredictable and exclusive; a symlink is followed to the file
    it names (the link stays); directories, dangling links and the store's own files are refused."""
    shared = tmp_path / "shared"
    shared.mkdir()
    secret = tmp_path / "attacker.txt"
    for pid in range(1, 70000, 997):  # the old predictable names: .backup.jsonl.<pid>.tmp
        (shared / f".backup.jsonl.{pid}.tmp").symlink_to(secret)
    assert run_cli(["export", "-o", str(shared / "backup.jsonl")], small).code == 0
    assert not secret.exists() and len((shared / "backup.jsonl").read_text().splitlines()) == 3
    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    (tmp_path / "link.jsonl").symlink_to(real)
    assert run_cli(["export", "-o", str(tmp_path / "link.jsonl")], small).code == 0
    assert (tmp_path / "link.jsonl").is_symlink() and len(real.read_text().splitlines()) == 3
    database = (small / "memories.sqlite3").read_bytes()
    for target, message in (
        (small / "memories.sqlite3", "is inside the store"),
        (small / "new.jsonl", "is inside the store"),
        (Path("."), "is a directory"),
        (Path(""), "is a directory"),
        (tmp_path, "is a directory"),
    ):
        refused = run_cli(["export", "-o", str(target)], small)
        assert refused.code == 2 and message in refused.stderr, (target, refused.stderr)
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert "symbolic link to nothing" in run_cli(["export", "-o", str(tmp_path / "dangling")], small).stderr
    assert (small / "memories.sqlite3").read_bytes() == database and not (small / "new.jsonl").exists()


def test_export_to_a_device_or_stream_writes_in_place(small: Path, tmp_path: Path) -> None:
    """`-o /dev/stdout` reaches the reader and `-o /dev/null` stays a device, even for root. Tested
    on private stand-ins — a FIFO behind a symlink (what /dev/stdout is for a pipe) and a character
    device made with mknod where allowed — so a regression can never replace the machine's /dev."""
    import os
    import stat
    import threading

    fifo, link = tmp_path / "pipe", tmp_path / "stdout"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert run_cli(["export", "-o", str(link)], small).code == 0
    reader.join(timeout=30)
    assert (
        received
        and len(received[0].splitlines()) == 3
        and link.is_symlink()
        and stat.S_ISFIFO(os.stat(fifo).st_mode)
    )
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod is not allowed here (not root)")
    assert run_cli(["export", "-o", str(device)], small).code == 0
    assert stat.S_ISCHR(os.stat(device).st_mode)


def test_an_emptied_database_is_reported_not_taken_for_a_new_store(small: Path) -> None:
    """Issue 15 #8: only a database remem is making (under its lock) may be empty; a 0-byte file
    found later is damage: every command says so, and none "repairs" it into an empty store."""
    (small / "memories.sqlite3").write_bytes(b"")
    for args in (["list"], ["add", "a new memory"], ["doctor"], ["export"]):
        result = run_cli(args, small)
        assert result.code == 2 and "is empty (0 bytes), not a remem database" in result.stderr, args
    assert (small / "memories.sqlite3").stat().st_size == 0


def test_a_new_store_in_an_existing_empty_directory_is_made(tmp_path: Path) -> None:
    empty = tmp_path / "made-by-hand"
    empty.mkdir()
    assert run_cli(["add", "the first memory"], empty).code == 0
    assert run_cli(["list"], empty).code == 0  # (its 0755 mode is issue 15 #21, not done yet)
