"""A pinned caller's search scores count only the memories it sees: through the SDK's own client, on
``remem mcp --user alice`` and on ``remem serve`` with alice's token (real HTTP), on both back-ends,
alice's scores and ranks stay the same when bob stores memories holding the words she searches for
(an unpinned search of the same memories moves: its statistics are the whole store's)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp_support import memories, server, warm

import remem
from remem import NewMemory
from serve_support import call, serving, session

SEEN = [
    NewMemory("alice keeps the zebra key in the blue drawer", user="alice"),
    NewMemory("alice feeds the giraffe at noon", user="alice"),
    NewMemory("alice painted a zebra and a giraffe", user="alice"),
    NewMemory("team note: deploys wait for the zebra review"),
]
BOBS = [NewMemory(f"bob saw a zebra, {' and '.join(['a long walk'] * n)}", user="bob") for n in range(1, 6)]
SEARCHES = [(query, mode) for query in ("zebra", "giraffe", "zebra drawer") for mode in ("keyword", "hybrid")]

Search = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


async def _scores(search: Search) -> list[list[tuple[int, float, int | None, int | None]]]:
    found = [await search({"query": query, "mode": mode, "k": 10}) for query, mode in SEARCHES]
    return [[(h["id"], h["score"], h["vector_rank"], h["keyword_rank"]) for h in f["hits"]] for f in found]


def _unpinned(store: Path | str) -> list[list[tuple[int, float]]]:
    alice = remem.Filters.of(user="alice", shared=True)
    with memories(store) as m:  # type: ignore[arg-type]
        found = [m.search(query, k=10, mode=mode, where=alice) for query, mode in SEARCHES]
    return [[(hit.memory.id, hit.score) for hit in hits] for hits in found]


def _bob_adds(store: Path | str) -> None:
    with memories(store) as m:  # type: ignore[arg-type]
        m.add_many(BOBS)


def test_remem_mcp_user_scores_ignore_other_users_memories(either_store: Path | str) -> None:
    with memories(either_store) as m:  # type: ignore[arg-type]
        m.add_many(SEEN)
    unpinned = _unpinned(either_store)
    app = server(either_store, user="alice")  # type: ignore[arg-type]

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)

            async def search(arguments: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool("memory_search", arguments)
                assert not result.is_error and result.structured_content is not None, result.content
                return result.structured_content

            before = await _scores(search)
            _bob_adds(either_store)
            assert await _scores(search) == before

    anyio.run(scenario)
    assert _unpinned(either_store) != unpinned  # the owner's filter: whole-store statistics


def test_a_tokens_scores_ignore_other_users_memories(either_store: Path | str) -> None:
    with memories(either_store) as m:  # type: ignore[arg-type]
        m.add_many(SEEN)
        token = m.tokens.add(user="alice")[0]

    async def scenario(url: str) -> None:
        async with session(url, token) as alice:

            async def search(arguments: dict[str, Any]) -> dict[str, Any]:
                return await call(alice, "memory_search", arguments)

            before = await _scores(search)
            _bob_adds(either_store)
            assert await _scores(search) == before

    with serving(either_store) as http:
        anyio.run(scenario, http.url)
