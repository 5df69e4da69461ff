"""docs/scaling.md's plan for Citus, held against the schema this remem creates.

The page names how each table would be placed (distributed by ``owner_key`` or a reference table)
and lists every primary key, unique index, foreign key and distribution column of the tables, each
marked ``keep`` (Citus accepts it as it is) or ``change``. Here a new store's catalog is read and
Citus's rules are applied to it: a unique index or primary key of a distributed table must hold the
distribution column as a column of its own (an expression over it does not count); a foreign key
between distributed tables holds it at the same position on both sides; a reference table may not
point at a distributed one; the distribution column is NOT NULL, not generated, and of a type with
a default hash operator class. A key added, removed or changed without the page fails here.
Citus itself is not installed: these are its rules as its source states them (the page links them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from remem.backends.postgres.store import PostgresBackend

PAGE = Path(__file__).resolve().parents[2] / "docs" / "scaling.md"
COLUMN = "owner_key"

#: (table, name, kind) of a key → whether Citus accepts it as it is.
Shape = dict[tuple[str, str, str], bool]


def marked_table(marker: str) -> list[list[str]]:
    """The rows (cells without backticks) of the Markdown table after ``<!-- marker: … -->``."""
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(f"<!-- {marker}:"))
    rows = []
    for line in lines[start + 3 :]:  # after the header and its rule
        if not line.startswith("|"):
            break
        rows.append([cell.strip().replace("`", "") for cell in line.strip("|").split("|")])
    return rows


def placement() -> dict[str, bool]:
    """table → True when the page distributes it by ``COLUMN``, False for a reference table or a
    local table on the coordinator (both keep their keys as they are)."""
    placed = {}
    for table, where, _ in marked_table("citus-tables"):
        assert where.startswith((f"distributed by {COLUMN}", "reference table", "local table")), where
        placed[table] = where.startswith("distributed")
    return placed


def promised() -> Shape:
    """The page's verdict on each key: True for ``keep``."""
    verdicts = {}
    for table, name, kind, _, verdict in marked_table("citus-keys"):
        assert verdict.startswith(("keep", "change:")), verdict
        verdicts[(table, name, kind)] = verdict.startswith("keep")
    return verdicts


def _attnum(cursor: psycopg.Cursor[Any], schema: str, table: str) -> int | None:
    cursor.execute(
        "SELECT attnum FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = %s "
        "AND NOT attisdropped",
        (f'"{schema}".{table}', COLUMN),
    )
    row = cursor.fetchone()
    return None if row is None else int(row[0])


def _column_ok(cursor: psycopg.Cursor[Any], schema: str, table: str) -> bool:
    """The distribution column exists, is NOT NULL, is not generated, and its type hashes."""
    cursor.execute(
        "SELECT a.attnotnull AND a.attgenerated = '' AND EXISTS (SELECT 1 FROM pg_opclass o JOIN pg_am m "
        "ON m.oid = o.opcmethod WHERE m.amname = 'hash' AND o.opcdefault AND o.opcintype = a.atttypid) "
        "FROM pg_attribute a WHERE a.attrelid = to_regclass(%s) AND a.attname = %s AND NOT a.attisdropped",
        (f'"{schema}".{table}', COLUMN),
    )
    row = cursor.fetchone()
    return row is not None and bool(row[0])


def shape(conn: psycopg.Connection[Any], schema: str, distributed: set[str]) -> Shape:
    """Every key of the schema's tables and whether Citus takes it as it is (module docstring)."""
    found: Shape = {}
    with conn.cursor() as cursor:
        position = {table: _attnum(cursor, schema, table) for table in distributed}
        for table in distributed:
            found[(table, COLUMN, "distribution column")] = _column_ok(cursor, schema, table)
        cursor.execute(
            "SELECT c.relname, i.relname, x.indisprimary, x.indisexclusion, "
            "(x.indkey::int2[])[0:x.indnkeyatts - 1] FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid "
            "JOIN pg_class i ON i.oid = x.indexrelid WHERE c.relnamespace = %s::regnamespace "
            "AND (x.indisunique OR x.indisexclusion)",
            (schema,),
        )
        for table, name, primary, exclusion, keys in cursor.fetchall():
            kind = "primary key" if primary else "exclusion constraint" if exclusion else "unique index"
            found[(table, name, kind)] = table not in distributed or position[table] in keys
        cursor.execute(
            "SELECT c.relname, f.conname, t.relname, f.conkey, f.confkey FROM pg_constraint f "
            "JOIN pg_class c ON c.oid = f.conrelid JOIN pg_class t ON t.oid = f.confrelid "
            "WHERE f.contype = 'f' AND c.relnamespace = %s::regnamespace",
            (schema,),
        )
        for table, name, target, keys, target_keys in cursor.fetchall():
            if table not in distributed or target not in distributed:
                ok = target not in distributed  # to a reference table: fine; from one: refused
            else:
                pairs = list(zip(keys, target_keys, strict=True))
                ok = (position[table], position[target]) in pairs
            found[(table, name, "foreign key")] = ok
    return found


@pytest.fixture
def store(postgres_url: str) -> tuple[str, str]:
    """A new store made by this remem at its current schema version: (server URL, schema)."""
    PostgresBackend.open(postgres_url, create=True).close()
    return postgres_url.rsplit("&schema=", 1)[0], parse_qs(urlsplit(postgres_url).query)["schema"][0]


def tables_of(conn: psycopg.Connection[Any], schema: str) -> set[str]:
    rows = conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace AND relkind IN ('r', 'p')",
        (schema,),
    )
    return {str(name) for (name,) in rows.fetchall()}


def test_the_page_places_every_table_of_a_store(store: tuple[str, str]) -> None:
    server, schema = store
    with psycopg.connect(server) as conn:
        assert sorted(placement()) == sorted(tables_of(conn, schema))


def test_the_page_lists_every_key_and_which_ones_citus_refuses(store: tuple[str, str]) -> None:
    server, schema = store
    distributed = {table for table, spread in placement().items() if spread}
    with psycopg.connect(server) as conn:
        assert shape(conn, schema, distributed) == promised()


def test_identity_columns_of_the_distributed_tables_are_bigint(store: tuple[str, str]) -> None:
    """Citus takes identity columns of distributed tables as bigint (its sequences give each node a
    range); the distribution column is not among them."""
    server, schema = store
    distributed = [table for table, spread in placement().items() if spread]
    with psycopg.connect(server) as conn:
        rows = conn.execute(
            "SELECT c.relname, a.attname, a.atttypid::regtype::text FROM pg_attribute a "
            "JOIN pg_class c ON c.oid = a.attrelid WHERE c.relnamespace = %s::regnamespace "
            "AND a.attidentity <> '' AND c.relname = ANY(%s)",
            (schema, distributed),
        ).fetchall()
    assert rows and all(kind == "bigint" and column != COLUMN for _, column, kind in rows)


def test_the_check_tells_a_key_citus_takes_from_one_it_refuses(store: tuple[str, str]) -> None:
    """The rules themselves, on a scratch copy of the shape: a unique index without the column is
    refused, with it (and the column NOT NULL) taken; so is an expression over the column."""
    server, schema = store
    s = f'"{schema}"'
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE UNIQUE INDEX no_owner ON {s}.memories (sha256, id)")
        conn.execute(f"ALTER TABLE {s}.memories ADD COLUMN {COLUMN} bytea NOT NULL DEFAULT '\\x00'")
        conn.execute(f"CREATE UNIQUE INDEX with_owner ON {s}.memories ({COLUMN}, id)")
        conn.execute(f"CREATE UNIQUE INDEX hidden_owner ON {s}.memories ((lower({COLUMN}::text)), id)")
        found = shape(conn, schema, {"memories"})
    assert found[("memories", "no_owner", "unique index")] is False
    assert found[("memories", "with_owner", "unique index")] is True
    assert found[("memories", "hidden_owner", "unique index")] is False
    assert found[("memories", COLUMN, "distribution column")] is True
    assert found != {key: ok for key, ok in promised().items() if key[0] == "memories"}
