"""A store made before names were indexed by their keys (schema version 3) is upgraded on open: its
memories keep their names, filters and dedup work on them, and long names can be added after."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg

import remem
from remem.backends.postgres.schema import GIN_PENDING_LIST_KB, LATEST_VERSION, MIGRATIONS, quoted
from remem.testing import FakeEmbedder
from remem.types import text_sha256


def _make_old_store(url: str, version: int = 3) -> None:
    """The store as remem made it with schema ``version`` (3 or later), holding two memories."""
    schema = parse_qs(urlsplit(url).query)["schema"][0]
    s = quoted(schema)
    with psycopg.connect(url.rsplit("&schema=", 1)[0], autocommit=True) as conn, conn.transaction():
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"CREATE SCHEMA {s}")
        conn.execute(f"CREATE TABLE {s}.remem_schema (version integer PRIMARY KEY)")
        for number, migration in enumerate(MIGRATIONS[:version], start=1):
            for statement in migration:
                conn.execute(statement.format(s=s))
            conn.execute(f"INSERT INTO {s}.remem_schema VALUES (%s)", (number,))
        for text, user, tags in [("deploys freeze on Fridays", "ann", ["ops"]), ("lunch at noon", None, [])]:
            conn.execute(
                f'INSERT INTO {s}.memories (text, sha256, created_at, "user", tags, terms, term_count) '
                "VALUES (%s, %s, '2026-01-01T00:00:00Z', %s, %s, ''::tsvector, 0)",
                (text, text_sha256(text), user, tags),
            )


def test_a_version_3_store_is_upgraded_and_keeps_its_memories(postgres_url: str) -> None:
    _make_old_store(postgres_url)
    with remem.open(postgres_url, create=False, embedder=FakeEmbedder(), environ={}) as memories:
        assert [m.text for m in memories.list(user="ann")] == ["deploys freeze on Fridays"]
        assert [m.text for m in memories.list(tags=["ops"])] == ["deploys freeze on Fridays"]
        assert [h.memory.text for h in memories.search("freeze", mode="keyword")] == [
            "deploys freeze on Fridays"
        ]
        assert memories.add("deploys freeze on Fridays", user="ann").duplicate
        assert memories.add("lunch at noon").duplicate
        assert not memories.add("lunch at noon", user="ann").duplicate
        long_name = "x" * 2000 + "".join(chr(0x4E00 + i) for i in range(1000))
        added = memories.add("a long-named memory", user=long_name, tags=[long_name]).id
        assert [m.id for m in memories.list(user=long_name)] == [added]
        assert [m.id for m in memories.list(tags=[long_name])] == [added]
        checks, _ = memories.backend.doctor(repair=False)
        assert next(c for c in checks if c.name == "database").ok
    with psycopg.connect(postgres_url.rsplit("&schema=", 1)[0]) as conn:
        schema = quoted(parse_qs(urlsplit(postgres_url).query)["schema"][0])
        assert conn.execute(f"SELECT max(version) FROM {schema}.remem_schema").fetchone() == (LATEST_VERSION,)


def _gin_options(url: str) -> dict[str, list[str] | None]:
    """Each GIN index of the store's memories → its storage options."""
    schema = parse_qs(urlsplit(url).query)["schema"][0]
    with psycopg.connect(url.rsplit("&schema=", 1)[0]) as conn:
        rows = conn.execute(
            "SELECT c.relname, c.reloptions FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = to_regclass(%s) AND a.amname = 'gin'",
            (f"{quoted(schema)}.memories",),
        ).fetchall()
    return dict(rows)


def test_the_gin_indexes_a_search_reads_queue_little_in_new_and_upgraded_stores(
    postgres_url: str, postgres_base: str, tmp_path: Path
) -> None:
    """Every search scans a GIN index's whole pending list: new stores bound it, and opening a
    version 5 store bounds its indexes' (and merges what they queued)."""
    import postgres_server

    _make_old_store(postgres_url, version=5)
    fresh_postgres_url = postgres_server.store_url(postgres_base, str(tmp_path / "new"))
    assert set(_gin_options(postgres_url).values()) == {None}
    bounded = [f"gin_pending_list_limit={GIN_PENDING_LIST_KB}"]
    for url in (postgres_url, fresh_postgres_url):
        with remem.open(url, embedder=FakeEmbedder(), environ={}) as memories:
            assert [h.memory.text for h in memories.search("Fridays", mode="keyword")] == (
                ["deploys freeze on Fridays"] if url == postgres_url else []
            )
        options = _gin_options(url)
        assert sorted(options) == ["memories_meta", "memories_tags", "memories_terms"]
        assert all(value == bounded for value in options.values()), options
