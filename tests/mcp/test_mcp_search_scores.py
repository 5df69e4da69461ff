"""A hit's ``score`` over MCP (issue 48 #2), through the SDK's own client: a calibrated relevance in
[0, 1] in every mode, ``min_score`` filtering that scale in every mode (keyword mode refused it
before), and ``explain`` saying how the score was computed."""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from mcp_support import call, memories, run, server, warm

from remem import NewMemory

KEY = "bob rotates the deploy key every ninety days"
NOTES = [NewMemory(f"team note {i}: the weekly review of topic number {i} went fine") for i in range(20)]


def test_scores_and_min_score_are_one_scale_in_every_mode(store_dir: Path) -> None:
    with memories(store_dir) as m:
        m.add_many([NewMemory(KEY), *NOTES])
    app = server(store_dir)

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            for mode in ("hybrid", "vector", "keyword"):
                everything = await call(client, "memory_search", {"query": KEY, "mode": mode, "k": 30})
                kept = await call(
                    client, "memory_search", {"query": KEY, "mode": mode, "k": 30, "min_score": 0.5}
                )
                scores = [hit["score"] for hit in everything["hits"]]
                assert all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)
                assert [h["id"] for h in kept["hits"]] == [
                    h["id"] for h in everything["hits"] if h["score"] >= 0.5
                ]
                assert kept["hits"][0]["text"] == KEY, mode
            explained = await call(client, "memory_search", {"query": KEY, "explain": True, "k": 1})
            (hit,) = explained["hits"]
            calibration = hit["explain"]["calibration"]
            assert calibration["relevance"] == hit["score"] and calibration["rank"] == 1
            assert calibration["cosine"] > 0.9  # the lone top hit's fused score, back in cosine units

    run(scenario)
