"""memory_add with supersedes keeps the old memory's conversation, tags and meta unless given
(issue 53 #2), through the SDK's own client, on both back-ends."""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from mcp_support import call, run, server, warm

OLD = "We run Postgres 16 in production"
NEW = "We run Postgres 17 in production"


def test_a_superseding_memory_keeps_what_the_old_one_was_filed_under(either_store: Path | str) -> None:
    app = server(either_store)

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            filed = {"conversation": "infra", "tags": ["db"], "meta": {"team": "sre"}}
            assert (await call(client, "memory_add", {"text": OLD, **filed}))["id"] == 1
            assert (await call(client, "memory_add", {"text": NEW, "supersedes": 1}))["id"] == 2
            new = (await call(client, "memory_get", {"ids": [2]}))["memories"][0]
            assert (new["conversation"], new["tags"], new["meta"]) == ("infra", ["db"], {"team": "sre"})
            given = await call(
                client, "memory_add", {"text": "We run Postgres 18", "supersedes": 2, "tags": []}
            )
            assert (await call(client, "memory_get", {"ids": [given["id"]]}))["memories"][0]["tags"] == []

    run(scenario)
