"""Every search scans a GIN index's whole pending list: a new store bounds the lists of the GIN
indexes a search reads (``GIN_PENDING_LIST_KB``)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import psycopg

import remem
from remem.backends.postgres.schema import GIN_PENDING_LIST_KB, quoted
from remem.testing import FakeEmbedder


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


def test_the_gin_indexes_a_search_reads_queue_little(postgres_url: str) -> None:
    with remem.open(postgres_url, embedder=FakeEmbedder(), environ={}) as memories:
        memories.add("deploys freeze on Fridays", tags=["ops"])
        assert [h.memory.text for h in memories.search("Fridays", mode="keyword", tags=["ops"])] == [
            "deploys freeze on Fridays"
        ]
    options = _gin_options(postgres_url)
    assert sorted(options) == ["memories_meta", "memories_tags", "memories_terms"]
    assert all(value == [f"gin_pending_list_limit={GIN_PENDING_LIST_KB}"] for value in options.values()), (
        options
    )
