"""`remem mcp` on a PostgreSQL store: the same tools, the warm-up's pending adds embedded on the
server, and another client (the CLI, another host) seeing the same memories."""

from __future__ import annotations

import pytest
from mcp import Client
from mcp_support import call, fail, memories, run, server, warm

pytest.importorskip("psycopg")


def test_the_tools_work_on_a_postgres_store(postgres_url: str) -> None:
    app = server(postgres_url)  # type: ignore[arg-type]

    async def scenario() -> None:
        async with Client(app) as client:
            added = await call(
                client, "memory_add", {"text": "The deploy key rotates every 90 days", "tags": ["ops"]}
            )
            assert added == {"id": 1, "duplicate": False, "embedded": False}  # stored before the model
            found = await call(client, "memory_search", {"query": "deploy key"})
            assert found["mode"] == "keyword" and [h["id"] for h in found["hits"]] == [1]
            await warm(app)
            with memories(postgres_url) as other:  # type: ignore[arg-type]
                assert other.pending_count() == 0
                other.add("Backups run nightly at 02:00", user="ann")
            vector = await call(
                client, "memory_search", {"query": "rotates deploy key", "mode": "vector", "k": 1}
            )
            assert [h["id"] for h in vector["hits"]] == [1]
            hybrid = await call(client, "memory_search", {"query": "nightly backups", "user": "ann"})
            assert [h["id"] for h in hybrid["hits"]] == [2]
            edited = await call(
                client, "memory_edit", {"id": 1, "text": "The deploy key rotates every 30 days"}
            )
            assert "30 days" in edited["text"]
            listed = await call(client, "memory_list", {"tags": ["ops"]})
            assert [m["id"] for m in listed["memories"]] == [1]
            assert (await call(client, "memory_get", {"ids": [7]}))["missing"] == [7]
            assert await fail(client, "memory_edit", {"id": 7, "text": "nobody"}) == "there is no memory 7"
            await call(client, "memory_forget", {"ids": [2]})
            with memories(postgres_url) as other:  # type: ignore[arg-type]
                assert [m.id for m in other.list()] == [1]

    run(scenario)
