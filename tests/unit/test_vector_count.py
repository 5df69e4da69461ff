"""The stored vectors' count is kept by triggers in the write that changes them (no search or add
counts the table): through adds, edits and forgets (the cascade from the memory); a
count that differs anyway is the doctor's finding, and its repair counts again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import remem
from remem.backends.local.files import DB_FILE
from remem.testing import FakeEmbedder


def _counts(store: Path) -> tuple[int, int]:
    """(the recorded count, the rows of ``vectors``), read from the file."""
    conn = sqlite3.connect(store / DB_FILE)
    try:
        (recorded,) = conn.execute("SELECT value FROM store_meta WHERE key = 'vector_count'").fetchone()
        (rows,) = conn.execute("SELECT count(*) FROM vectors").fetchone()
    finally:
        conn.close()
    return int(recorded), int(rows)


def test_the_count_follows_adds_edits_and_forgets(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with remem.open(store, embedder=FakeEmbedder()) as memories:
        ids = memories.add_many([f"memory {n} about the garden" for n in range(30)]).added
        memories.add("a long memory " + "with many words " * 200)  # more than one window
        memories.edit(ids[0], text="memory zero, edited")
        memories.forget([ids[1], ids[2]])
        assert memories.backend.index_state().vectors == _counts(store)[1]
    recorded, rows = _counts(store)
    assert recorded == rows and rows > 28


def test_a_count_gone_wrong_is_found_and_counted_again(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with remem.open(store, embedder=FakeEmbedder()) as memories:
        memories.add_many([f"memory {n}" for n in range(5)])
    conn = sqlite3.connect(store / DB_FILE, isolation_level=None)
    conn.execute("UPDATE store_meta SET value = '7' WHERE key = 'vector_count'")
    conn.close()
    with remem.open(store, embedder=FakeEmbedder()) as memories:
        checks, _ = memories.backend.doctor(repair=False)
        vectors = next(check for check in checks if check.name == "vectors")
        assert not vectors.ok and vectors.detail == "7 recorded as stored where 5 are" and vectors.repairable
        checks, repaired = memories.backend.doctor(repair=True)
        assert "counted the stored vectors again" in repaired and all(check.ok for check in checks)
    assert _counts(store) == (5, 5)
