"""memory_search on a 2 MB memory (issue 26 #5): the hit's text is cut to its first characters as
before, and ``snippet`` carries the part that matched, with its offsets in the whole text — through
the SDK's own client."""

from __future__ import annotations

import random
from pathlib import Path

from mcp import Client
from mcp_support import call, memories, run, server, warm

NEEDLE = "the zanzibar vault key rotates on fridays"
WORDS = ["alpha", "beta", "gamma", "delta", "report", "status", "queue", "build", "plan"]


def test_memory_search_carries_the_snippet_of_a_long_memory(store_dir: Path) -> None:
    chance = random.Random(7)
    filler = " ".join(chance.choice(WORDS) for _ in range(340_000))
    text = f"{filler[:1_999_000]} {NEEDLE} {filler[:900]}"
    with memories(store_dir) as direct:
        direct.max_text_chars = 3_000_000
        long_id = direct.add(text).id
        short_id = direct.add("a short note on the zanzibar vault").id
    app = server(store_dir)

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            for mode in ("hybrid", "keyword"):
                found = await call(client, "memory_search", {"query": "zanzibar vault", "mode": mode})
                hits = {hit["id"]: hit for hit in found["hits"]}
                snippet = hits[long_id]["snippet"]
                assert hits[long_id]["truncated"] and NEEDLE in snippet["text"], mode
                assert text[snippet["start"] : snippet["end"]] == snippet["text"]
                assert hits[short_id]["snippet"] is None and not hits[short_id]["truncated"]

    run(scenario)
