"""memory_search saying why (issue 48 #3), through the SDK's own client: ``explain`` per hit, a
note when nothing is found and when an identifier is held by no memory."""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from mcp_support import call, memories, run, server, warm

import dated_store as day


def test_memory_search_explains_its_hits_and_says_why_it_found_nothing(store_dir: Path) -> None:
    with memories(store_dir) as direct:
        direct.add("Rolled back deploy 9f3c2ab1d4e5 after the importer failed with E1045.")
        lunch = direct.add(day.FRIDAY_LUNCH, created_at=day.last("friday")).id
        direct.add(day.TUESDAY_LUNCH, created_at=day.last("tuesday"))
    app = server(store_dir)

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            asked = {"query": "what did we order for lunch on Friday", "explain": True}
            found = await call(client, "memory_search", asked)
            first = found["hits"][0]
            assert first["id"] == lunch and first["explain"]["lifts"] == [{"name": "time", "size": 1.0}]
            assert first["explain"]["vector"]["rank"] == first["vector_rank"]
            plain = await call(client, "memory_search", {"query": "lunch"})
            assert plain["hits"][0]["explain"] is None
            none = await call(client, "memory_search", {"query": "E1046", "mode": "keyword"})
            assert none["hits"] == [] and "no memory holds 'E1046'" in none["notes"]
            near = await call(client, "memory_search", {"query": "E1046"})
            assert near["hits"] and any("No memory holds 'E1046'" in note for note in near["notes"])

    run(scenario)
