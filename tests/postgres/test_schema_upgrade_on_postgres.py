"""A store made before names were indexed by their keys (schema version 3) is upgraded on open: its
memories keep their names, filters and dedup work on them, and long names can be added after."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import psycopg

import remem
from remem.backends.postgres.schema import LATEST_VERSION, MIGRATIONS, quoted
from remem.testing import FakeEmbedder
from remem.types import text_sha256


def _make_version_3_store(url: str) -> None:
    """The store as remem made it with schema version 3, holding two memories."""
    schema = parse_qs(urlsplit(url).query)["schema"][0]
    s = quoted(schema)
    with psycopg.connect(url.rsplit("&schema=", 1)[0], autocommit=True) as conn, conn.transaction():
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f"CREATE SCHEMA {s}")
        conn.execute(f"CREATE TABLE {s}.remem_schema (version integer PRIMARY KEY)")
        for number, migration in enumerate(MIGRATIONS[:3], start=1):
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
    _make_version_3_store(postgres_url)
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
