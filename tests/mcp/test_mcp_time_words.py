"""memory_search with time words, through the SDK's own client (issue 48 #1): the day a question
names is evidence, not a filter; only ``since``/``until`` filter."""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from mcp_support import call, memories, run, server, warm

import dated_store as day


def test_memory_search_ranks_the_named_day_first_and_hides_no_answer(store_dir: Path) -> None:
    with memories(store_dir) as direct:
        for text, when in day.memories():
            direct.add(text, created_at=when)
    app = server(store_dir)

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            deploy = await call(client, "memory_search", {"query": "why do we not deploy on Friday"})
            assert deploy["hits"][0]["text"] == day.DEPLOY_RULE
            assert deploy["dates"]["phrase"] == "on Friday" and not deploy["dates"]["all_time"]
            lunch = await call(client, "memory_search", {"query": "what did we order for lunch on Friday"})
            texts = [hit["text"] for hit in lunch["hits"]]
            assert texts[0] == day.FRIDAY_LUNCH and day.TUESDAY_LUNCH in texts
            friday = day.last("friday").date().isoformat()
            bounded = {"query": "why do we not deploy", "since": friday, "until": friday + "T23:59"}
            found = await call(client, "memory_search", bounded)
            assert {hit["text"] for hit in found["hits"]} <= {day.FRIDAY_LUNCH, day.FRIDAY_OTHER}

    run(scenario)
