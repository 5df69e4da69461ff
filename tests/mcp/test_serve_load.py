"""`remem serve` under a small load, on both stores: 8 SDK clients at once (tokens of two users)
make mixed calls; none fails, every acknowledged add is stored with its text and its token's user,
and no client ever sees a memory of the other user (the shared ones, yes)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_support import memories

from remem import NewMemory
from serve_support import call, serving, session

pytestmark = pytest.mark.slow  # real processes, kills or races (the slow tier)

USERS = ("alice", "bob")
CLIENTS, CALLS = 8, 40
MIX = ["memory_search"] * 5 + ["memory_add"] * 3 + ["memory_list", "memory_context", "memory_get"]


def _text(user: str | None, words: str) -> str:
    """A text marked with its owner (``[team]`` for a shared one), sharing words with every other."""
    return f"[{user or 'team'}] note about the deploy key and the staging database: {words}"


def _fill(store: Path | str) -> dict[str, str]:
    """Each user's memories and some shared ones; a token per user (user -> secret)."""
    with memories(store) as m:  # type: ignore[arg-type]
        owners = (*USERS, None)
        m.add_many([NewMemory(_text(owners[i % 3], f"seed {i}"), user=owners[i % 3]) for i in range(30)])
        return {user: m.tokens.add(user=user)[0] for user in USERS}


def _seen(name: str, result: dict[str, Any]) -> list[str]:
    """The texts (or prompt lines) of the memories a result shows."""
    if name == "memory_search":
        return [hit["text"] for hit in result["hits"]]
    if name == "memory_context":
        return [item["line"] for item in result["items"]]
    if name == "memory_add":
        return []
    return [memory["text"] for memory in result["memories"]]


async def _client(
    url: str, user: str, secret: str, number: int, acknowledged: list[tuple[int, str, str]]
) -> None:
    """``CALLS`` mixed calls; every memory shown must be the user's or a shared one."""
    rng = random.Random(number)
    other = next(u for u in USERS if u != user)
    async with session(url, secret) as mcp:
        for i in range(CALLS):
            name = rng.choice(MIX)
            choices: dict[str, dict[str, Any]] = {
                "memory_search": {"query": f"{other} note deploy key staging", "k": 10},
                "memory_add": {"text": _text(user, f"client {number} call {i}")},
                "memory_list": {"limit": 50},
                "memory_context": {"query": f"{other} deploy key", "recent": 10, "similar": 10},
                "memory_get": {"ids": rng.sample(range(1, 31 + len(acknowledged) + 5), 10)},
            }
            arguments = choices[name]
            result = await call(mcp, name, arguments)
            for text in _seen(name, result):
                assert f"[{other}]" not in text and ("[team]" in text or f"[{user}]" in text), (name, text)
            if name == "memory_add":
                acknowledged.append((result["id"], arguments["text"], user))


def test_eight_clients_of_two_users_mixed_calls_no_error_every_add_stored_no_leak(
    either_store: Path | str,
) -> None:
    secrets = _fill(either_store)
    acknowledged: list[tuple[int, str, str]] = []

    async def load(url: str) -> None:
        async with anyio.create_task_group() as group:
            for number in range(CLIENTS):
                user = USERS[number % 2]
                group.start_soon(_client, url, user, secrets[user], number, acknowledged)

    with serving(either_store) as server:
        anyio.run(load, server.url)
    assert len(acknowledged) > CLIENTS * CALLS // 8  # adds were made (about 27 % of the calls)
    with memories(either_store) as m:  # type: ignore[arg-type]
        stored = m.get_many([memory_id for memory_id, _, _ in acknowledged])
    assert len({memory_id for memory_id, _, _ in acknowledged}) == len(acknowledged)
    for memory_id, text, user in acknowledged:
        assert (stored[memory_id].text, stored[memory_id].user) == (text, user)
