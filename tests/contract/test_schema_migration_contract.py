"""A store's schema is upgraded when it is opened, on every back-end: a store made at an earlier
schema version, opened by a remem with a later migration, keeps every memory, token and pending
vector, and everything works on it (``MIGRATIONS`` of ``backends/local/migrations.py`` and
``backends/postgres/schema.py``).

remem 0.1 ships schema version 1; step 2 adds who wrote each memory (``written_by``, unknown for
the memories already stored). The store here is made, then taken back to version 1 as remem 0.1
left it (the column dropped), then opened with every real step and one of the test's own appended,
as a future release would append its own.
"""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from remem import Memories
from remem.backends.local import LocalBackend
from remem.core.opening import model_catalog
from remem.testing import FakeEmbedder

if TYPE_CHECKING:
    from remem.backends.base import Backend

#: Each back-end's module of migrations, and the step this test appends: a column and an index.
MODULES = {"local": "remem.backends.local.migrations", "postgres": "remem.backends.postgres.schema"}
STEP_2 = {
    "local": (
        "ALTER TABLE memories ADD COLUMN note TEXT",
        "CREATE INDEX memories_note ON memories (note) WHERE note IS NOT NULL",
    ),
    "postgres": (
        "ALTER TABLE {s}.memories ADD COLUMN note text",
        "CREATE INDEX memories_note ON {s}.memories (note) WHERE note IS NOT NULL",
    ),
}


def _memories(backend: Backend) -> Memories:
    return Memories(backend, model_catalog(environ={}), FakeEmbedder())


def _version_and_columns(backend: Backend) -> tuple[int, list[str]]:
    """The store's schema version and its memories' columns, read from its database directly."""
    if isinstance(backend, LocalBackend):
        from remem.backends.local.files import DB_FILE

        conn = sqlite3.connect(backend.directory / DB_FILE)
        try:
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            return int(version), [row[1] for row in conn.execute("PRAGMA table_info(memories)")]
        finally:
            conn.close()
    import psycopg

    from remem.backends.postgres.store import PostgresBackend

    assert isinstance(backend, PostgresBackend)
    with psycopg.connect(backend.session.url.conninfo) as pg:
        row = pg.execute(f"SELECT max(version) FROM {backend.s}.remem_schema").fetchone()
        columns = pg.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0 "
            "AND NOT attisdropped ORDER BY attnum",
            (f"{backend.s}.memories",),
        ).fetchall()
    assert row is not None
    return int(row[0]), [name for (name,) in columns]


def _back_to_version_1(backend: Backend) -> None:
    """The closed store ``backend`` as remem 0.1 made it: without step 2's column (nor, locally, step
    3's counted vectors and step 4's stored keyword heads), at version 1."""
    if isinstance(backend, LocalBackend):
        from remem.backends.local.files import DB_FILE

        conn = sqlite3.connect(backend.directory / DB_FILE, isolation_level=None)
        try:
            conn.execute("ALTER TABLE memories DROP COLUMN written_by")
            conn.execute("DROP TRIGGER vectors_counted_in")
            conn.execute("DROP TRIGGER vectors_counted_out")
            conn.execute("DROP TABLE keyword_heads")
            conn.execute("DROP TABLE keyword_rewrites")
            conn.execute("DELETE FROM store_meta WHERE key = 'vector_count'")
            conn.execute("PRAGMA user_version = 1")
        finally:
            conn.close()
        return
    import psycopg

    from remem.backends.postgres.store import PostgresBackend

    assert isinstance(backend, PostgresBackend)
    with psycopg.connect(backend.session.url.conninfo) as pg:
        pg.execute(f"ALTER TABLE {backend.s}.memories DROP COLUMN written_by")
        pg.execute(f"DELETE FROM {backend.s}.remem_schema WHERE version > 1")


def test_a_store_of_an_earlier_schema_version_is_upgraded_on_open_and_keeps_working(
    open_backend: Callable[..., Backend], request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = request.node.callspec.params["open_backend"]
    module = importlib.import_module(MODULES[name])
    real = module.MIGRATIONS
    before = _memories(open_backend())
    ids = [
        before.add("the deploy window opens at nine", user="alice", tags=["ops"]).id,
        before.add("the office coffee machine is broken again").id,
        before.add("a memory still waiting for its vectors", embed=False).id,
    ]
    secret, token = before.tokens.add(user="alice")
    made = before.backend
    before.close()
    _back_to_version_1(made)
    version, columns = _version_and_columns(made)
    assert version == 1 and "note" not in columns and "written_by" not in columns

    monkeypatch.setattr(module, "MIGRATIONS", (*real, STEP_2[name]))
    monkeypatch.setattr(module, "LATEST_VERSION", len(real) + 1)
    after = _memories(open_backend())
    version, columns = _version_and_columns(after.backend)
    assert version == len(real) + 1 and columns[-2:] == ["written_by", "note"]
    assert sorted(after.get_many(ids)) == ids
    assert {m.written_by for m in after.get_many(ids).values()} == {None}  # unknown: written before
    assert [m.id for m in after.list(user="alice")] == [ids[0]]
    assert [h.memory.id for h in after.search("deploy window", mode="keyword", tags=["ops"])] == [ids[0]]
    new = after.add("the deploy window opens at ten", user="alice", tags=["ops"], supersedes=ids[0]).id
    assert [h.memory.id for h in after.search("deploy window", mode="hybrid", tags=["ops"])] == [new]
    assert after.embed_pending() == 1
    assert after.tokens.verify(secret) == token
    checks, _ = after.backend.doctor(repair=False)
    assert all(check.ok for check in checks), [c for c in checks if not c.ok]
