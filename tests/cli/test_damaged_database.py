"""A damaged database is reported (issue 15 #8, #16): by every command in one error line, never
with a memory's text, never "repaired" into an empty store; doctor reports it; the library raises
its own errors."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path

import pytest

import remem
from helpers import one_error, run_cli
from remem.backends.local.files import DB_FILE
from remem.errors import InvalidInputError, StoreCorruptError
from remem.testing import FakeEmbedder


def _damaged_copies(store: Path, tmp_path: Path, count: int) -> list[Path]:
    size = (store / DB_FILE).stat().st_size
    copies = []
    for trial in range(count):
        copy = tmp_path / f"damaged{trial}"
        shutil.copytree(store, copy)
        rnd = random.Random(trial)
        with open(copy / DB_FILE, "r+b") as handle:
            handle.seek(rnd.randrange(4096, size - 600))
            handle.write(bytes(rnd.randrange(256) for _ in range(rnd.choice([8, 64, 512]))))
        copies.append(copy)
    return copies


def test_a_damaged_database_is_reported_without_memory_text(store_dir: Path, tmp_path: Path) -> None:
    lines = "".join(
        json.dumps({"text": f"secret number {i} " + "word " * (i % 50), "meta": {"k": str(i)}}) + "\n"
        for i in range(300)
    )
    assert run_cli(["add", "--jsonl", "-"], store_dir, stdin=lines).code == 0
    commands = [
        ["list", "-k", "1000"],
        ["search", "secret number"],
        ["search", "--mode", "keyword", "word"],
        ["show", "5"],
        ["stats"],
        ["export"],
        ["context", "number"],
        ["add", "one more"],
        ["forget", "3"],
        ["reindex", "--force"],
    ]
    for copy in _damaged_copies(store_dir, tmp_path, 12):
        for command in commands:
            result = run_cli(command, copy)
            assert result.code in (0, 1, 2), (command, result)
            assert "unexpected" not in result.stderr and "secret" not in result.stderr, (
                command,
                result.stderr,
            )
            assert result.stderr.count("Error:") <= 1
        doctor = run_cli(["doctor"], copy)
        assert doctor.code in (0, 2) and "Error:" not in doctor.stderr, doctor.stderr


def test_text_that_is_not_utf8_in_the_database_is_damage_not_quoted(store_dir: Path) -> None:
    assert run_cli(["add", "a secret that gets damaged"], store_dir).code == 0
    with sqlite3.connect(store_dir / DB_FILE) as conn:
        conn.execute("UPDATE memories SET text = CAST(? AS TEXT) WHERE id = 1", (b"a secret \xff\xfe",))
    for command in (["list"], ["show", "1"], ["export"]):
        result = run_cli(command, store_dir)
        assert result.code == 2 and "secret" not in result.stderr
        one_error(result.stderr, "is damaged (a stored value is not valid text)")


def test_doctor_reports_a_damaged_database_instead_of_failing(store_dir: Path) -> None:
    assert run_cli(["add", "hello"], store_dir).code == 0
    with sqlite3.connect(store_dir / DB_FILE) as conn:
        conn.execute("UPDATE memories SET meta = 'not json' WHERE id = 1")
        conn.execute("UPDATE store_meta SET value = 'x' WHERE key = 'model_dim'")
    result = run_cli(["doctor"], store_dir)
    assert result.code == 2 and "Error:" not in result.stderr
    assert all(len(line.split()) >= 2 for line in result.stdout.splitlines())


def test_the_library_raises_its_own_errors_for_damage(store_dir: Path) -> None:
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        memories.add("hello there")
    with sqlite3.connect(store_dir / DB_FILE) as conn:
        conn.execute("UPDATE memories SET meta = '{broken' WHERE id = 1")
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        with pytest.raises(StoreCorruptError, match="damaged"):
            memories.list()
        with pytest.raises(StoreCorruptError, match="damaged"):
            list(memories.iter())
        with pytest.raises(InvalidInputError, match="not valid Unicode"):
            memories.add("bad \ud800 text")
        assert memories.get_many([2**63, -1, 0]) == {}


def test_an_emptied_database_is_reported_not_taken_for_a_new_store(small: Path) -> None:
    """Issue 15 #8: only a database remem is making (under its lock) may be empty; a 0-byte file
    found later is damage: every command says so, and none "repairs" it into an empty store."""
    (small / "memories.sqlite3").write_bytes(b"")
    for args in (["list"], ["add", "a new memory"], ["doctor"], ["export"]):
        result = run_cli(args, small)
        assert result.code == 2 and "is empty (0 bytes), not a remem database" in result.stderr, args
    assert (small / "memories.sqlite3").stat().st_size == 0
