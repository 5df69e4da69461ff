"""Schema migrations and the low-level SQLite records layer."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from remem.backends.local.connections import Connections, connect
from remem.backends.local.migrations import LATEST_VERSION, MIGRATIONS, migrate, schema_version
from remem.backends.local.records import Records
from remem.errors import StoreCorruptError, StoreError
from remem.types import Filters, NewMemory, text_sha256, utc_now_iso


@pytest.fixture
def raw_conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(tmp_path / "db.sqlite3", isolation_level=None)
    yield conn
    conn.close()


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


# --- migrations -------------------------------------------------------------------------------------


def test_latest_version_is_number_of_migrations() -> None:
    assert LATEST_VERSION == len(MIGRATIONS) >= 1


def test_new_database_ends_at_latest_version(raw_conn: sqlite3.Connection) -> None:
    assert schema_version(raw_conn) == 0
    assert migrate(raw_conn) == LATEST_VERSION
    (version,) = raw_conn.execute("PRAGMA user_version").fetchone()
    assert version == LATEST_VERSION
    assert {"memories", "memory_tags", "store_meta"} <= _tables(raw_conn)


def test_connect_brings_schema_to_latest(tmp_path: Path) -> None:
    conn = connect(tmp_path / "x.sqlite3")
    try:
        assert schema_version(conn) == LATEST_VERSION
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
        assert mode == "wal"
        (fk,) = conn.execute("PRAGMA foreign_keys").fetchone()
        assert fk == 1
    finally:
        conn.close()


def test_migrate_is_idempotent(raw_conn: sqlite3.Connection) -> None:
    migrate(raw_conn)
    before = sorted(raw_conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall())
    # re-running would fail with "table already exists" if any migration ran twice
    assert migrate(raw_conn) == LATEST_VERSION
    assert migrate(raw_conn) == LATEST_VERSION
    after = sorted(raw_conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall())
    assert before == after


def test_newer_schema_version_raises_store_error(raw_conn: sqlite3.Connection) -> None:
    raw_conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    with pytest.raises(StoreError, match="newer"):
        migrate(raw_conn)
    assert schema_version(raw_conn) == LATEST_VERSION + 1
    assert "memories" not in _tables(raw_conn)


def test_failing_migration_rolls_back_and_keeps_previous_version(raw_conn: sqlite3.Connection) -> None:
    migrations = (
        ("CREATE TABLE first (a INTEGER)",),
        ("CREATE TABLE second (b INTEGER)", "INSERT INTO first VALUES (1)", "THIS IS NOT SQL"),
    )
    with pytest.raises(sqlite3.OperationalError):
        migrate(raw_conn, migrations)
    assert schema_version(raw_conn) == 1
    assert "first" in _tables(raw_conn)
    assert "second" not in _tables(raw_conn)
    assert raw_conn.execute("SELECT count(*) FROM first").fetchone() == (0,)
    assert not raw_conn.in_transaction

    fixed = (migrations[0], ("CREATE TABLE second (b INTEGER)",))
    assert migrate(raw_conn, fixed) == 2
    assert "second" in _tables(raw_conn)


def test_migrate_applies_only_missing_migrations(raw_conn: sqlite3.Connection) -> None:
    one = (("CREATE TABLE t1 (a)",),)
    assert migrate(raw_conn, one) == 1
    two = (*one, ("CREATE TABLE t2 (a)",))
    assert migrate(raw_conn, two) == 2  # t1 is not created again (that would raise)
    assert {"t1", "t2"} <= _tables(raw_conn)


# --- connect errors ------------------------------------------------------------------------------------


def test_connect_garbage_file_raises_corrupt_naming_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.sqlite3"
    path.write_bytes(b"this is definitely not sqlite " * 200)
    with pytest.raises(StoreCorruptError) as info:
        connect(path)
    assert str(path) in str(info.value)


# --- helpers -------------------------------------------------------------------------------------------


def test_text_sha256_is_sha256_of_utf8() -> None:
    assert text_sha256("héllo ✓") == hashlib.sha256("héllo ✓".encode()).hexdigest()
    assert text_sha256("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_utc_now_iso_format() -> None:
    stamp = utc_now_iso()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)
    parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert abs((datetime.now(timezone.utc) - parsed).total_seconds()) < 60


def test_filters_is_empty() -> None:
    assert Filters().is_empty()
    assert not Filters(user="u").is_empty()
    assert not Filters(conversation="c").is_empty()
    assert not Filters(tags=("t",)).is_empty()


def _insert(records: Records, text: str, blob: bytes = b"\0", created_at: str | None = None) -> int:
    memory_id = records.insert(NewMemory(text), [blob], created_at or utc_now_iso())
    assert memory_id is not None
    return memory_id


# --- Records -------------------------------------------------------------------------------------------


@pytest.fixture
def records(tmp_path: Path) -> Iterator[Records]:
    path = tmp_path / "r.sqlite3"
    records = Records(Connections(connect(path), path, str(tmp_path)))
    yield records
    records.close()


def test_records_meta_set_and_overwrite(records: Records) -> None:
    assert records.get_meta("k") is None
    records.set_meta("k", "v1")
    records.set_meta("k", "v2")
    assert records.get_meta("k") == "v2"


def test_records_insert_duplicate_returns_none_and_writes_nothing(records: Records) -> None:
    first = records.insert(
        NewMemory("same", user="u", tags=("b", "a")), [b"\0" * 8], "2024-01-01T00:00:00.000Z"
    )
    assert first is not None
    again = records.insert(NewMemory("same", user="u", tags=("z",)), [b"\1" * 8], "2024-01-02T00:00:00.000Z")
    assert again is None
    assert records.count() == 1
    assert len(records.vector_ids()) == 1
    (memory,) = records.iter_all()
    assert memory.tags == ("a", "b")  # the duplicate's tags were not attached


def test_records_count_and_vector_ids(records: Records) -> None:
    assert (records.count(), records.vector_ids()) == (0, [])
    ids = [_insert(records, f"t{i}") for i in range(5)]
    assert records.count() == 5
    assert records.memory_of_vectors(records.vector_ids()) == dict(
        zip(records.vector_ids(), ids, strict=True)
    )


def test_records_iter_vectors_in_id_order_and_chunks(records: Records) -> None:
    blobs = [bytes([i]) * 8 for i in range(7)]
    ids = [_insert(records, f"t{i}", b) for i, b in enumerate(blobs)]
    chunks = list(records.iter_vectors(batch=3))
    assert [len(c) for c in chunks] == [3, 3, 1]
    flat = [pair for chunk in chunks for pair in chunk]
    vector_ids = records.vector_ids()
    assert flat == list(zip(vector_ids, blobs, strict=True))
    some = [vid for chunk in records.iter_vectors([vector_ids[5], vector_ids[1]]) for vid, _ in chunk]
    assert some == [vector_ids[1], vector_ids[5]]
    assert records.memory_of_vectors(some) == {vector_ids[1]: ids[1], vector_ids[5]: ids[5]}


def test_records_get_many_skips_missing_ids(records: Records) -> None:
    ids = [_insert(records, f"t{i}") for i in range(3)]
    found = records.get_many([ids[0], ids[2], 999])
    assert set(found) == {ids[0], ids[2]}
    assert found[ids[2]].text == "t2"


def test_records_get_many_more_than_one_chunk(records: Records) -> None:
    records.conn.execute("BEGIN")
    ids = [_insert(records, f"t{i}") for i in range(1203)]
    records.conn.execute("COMMIT")
    found = records.get_many(ids)
    assert len(found) == 1203
    assert all(found[mid].text == f"t{i}" for i, mid in enumerate(ids))
