"""memory_edit changes a memory's tags and meta as well as its text (issue 53 #2), through the SDK's
own client on both back-ends; a pinned caller still changes only its own memories."""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from mcp_support import call, fail, run, server, warm

TEXT = "We run Postgres 16 in production"


def test_memory_edit_changes_tags_and_meta(either_store: Path | str) -> None:
    app = server(either_store)

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            await call(client, "memory_add", {"text": TEXT, "tags": ["db"], "meta": {"team": "sre"}})
            edited = await call(client, "memory_edit", {"id": 1, "tags": ["postgres", "prod"]})
            assert (edited["text"], edited["tags"], edited["meta"]) == (
                TEXT,
                ["postgres", "prod"],
                {"team": "sre"},
            )
            edited = await call(
                client, "memory_edit", {"id": 1, "meta": {"owner": "bob"}, "text": "We run Postgres 17"}
            )
            assert (edited["text"], edited["tags"], edited["meta"]) == (
                "We run Postgres 17",
                ["postgres", "prod"],
                {"owner": "bob"},
            )
            listed = await call(client, "memory_list", {"tags": ["prod"]})
            assert [m["id"] for m in listed["memories"]] == [1]
            assert "give a new text, tags or meta" in await fail(client, "memory_edit", {"id": 1})

    run(scenario)


def test_a_pinned_caller_cannot_retag_anothers_memory(store_dir: Path) -> None:
    alice, bob = server(store_dir, user="alice"), server(store_dir, user="bob")

    async def scenario() -> None:
        async with Client(alice) as client:
            await call(client, "memory_add", {"text": TEXT, "tags": ["db"]})
        async with Client(bob) as client:
            assert await fail(client, "memory_edit", {"id": 1, "tags": ["mine"]}) == "there is no memory 1"
        async with Client(alice) as client:
            assert (await call(client, "memory_get", {"ids": [1]}))["memories"][0]["tags"] == ["db"]

    run(scenario)
