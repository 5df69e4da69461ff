"""`remem serve`: a token is a pin the server enforces. Through real HTTP and the SDK's own client,
for every tool: a user's token never sees, changes or learns the existence of another user's
memories; it sees the shared ones (no user) but cannot change them; a private token does not see
them; a read-only token cannot write; an admin token sees and changes everything."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp_support import memories

from remem import NewMemory
from serve_support import call, fail, serving, session

STORE = [
    NewMemory("alice keeps the blue deploy key", user="alice", conversation="c1", tags=("ops",)),
    NewMemory("bob keeps the red deploy key", user="bob", conversation="c1", tags=("ops",)),
    NewMemory("the team deploy key rotates monthly", tags=("ops",)),
    NewMemory("alice prefers short answers", user="alice", conversation="c2"),
]
ALICE, BOB, SHARED, ALICE_2 = 1, 2, 3, 4


def _fill(store: Path | str) -> dict[str, str]:
    """The memories above, and a token of each kind (name -> secret)."""
    with memories(store) as m:  # type: ignore[arg-type]
        m.add_many(STORE)
        return {
            "alice": m.tokens.add(user="alice")[0],
            "alice-private": m.tokens.add(user="alice", name="alice-private", private=True)[0],
            "alice-ro": m.tokens.add(user="alice", name="alice-ro", read_only=True)[0],
            "admin": m.tokens.add(user=None)[0],
        }


def _snapshot(store: Path | str) -> list[tuple[int, str, str | None, str | None]]:
    with memories(store) as m:  # type: ignore[arg-type]
        return [(x.id, x.text, x.user, x.updated_at) for x in m.iter()]


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_a_users_token_reads_its_own_and_the_shared_memories_never_anothers(
    either_store: Path | str, mode: str
) -> None:
    tokens = _fill(either_store)

    async def scenario(url: str) -> None:
        async with session(url, tokens["alice"]) as alice:
            for query in ("deploy key", "bob keeps the red deploy key"):  # the second is bob's, word for word
                found = await call(alice, "memory_search", {"query": query, "mode": mode, "k": 10})
                assert {hit["id"] for hit in found["hits"]} <= {ALICE, SHARED, ALICE_2}, query
                assert SHARED in {hit["id"] for hit in found["hits"]}
            context = await call(alice, "memory_context", {"query": "bob red deploy key", "recent": 10})
            assert {item["id"] for item in context["items"]} == {ALICE, SHARED, ALICE_2}
            assert "bob" not in context["prompt"]
            listed = await call(alice, "memory_list", {"limit": 100})
            assert [m["id"] for m in listed["memories"]] == [ALICE_2, SHARED, ALICE]
            got = await call(alice, "memory_get", {"ids": [ALICE, BOB, SHARED, 999]})
            assert [m["id"] for m in got["memories"]] == [ALICE, SHARED] and got["missing"] == [BOB, 999]
        async with session(url, tokens["alice-private"]) as private:
            found = await call(private, "memory_search", {"query": "deploy key", "mode": mode, "k": 10})
            assert ALICE in {hit["id"] for hit in found["hits"]} <= {ALICE, ALICE_2}
            listed = await call(private, "memory_list", {"limit": 100})
            assert [m["id"] for m in listed["memories"]] == [ALICE_2, ALICE]

    with serving(either_store) as server:
        anyio.run(scenario, server.url)


def test_a_users_token_changes_only_its_own_memories_and_learns_nothing_of_others(
    either_store: Path | str,
) -> None:
    tokens = _fill(either_store)
    before = _snapshot(either_store)

    async def scenario(url: str) -> None:
        async with session(url, tokens["alice"]) as alice:
            # Another user's memory answers exactly as a memory that does not exist.
            bob = await fail(alice, "memory_edit", {"id": BOB, "text": "hacked"})
            nobody = await fail(alice, "memory_edit", {"id": 999, "text": "hacked"})
            assert bob.replace(str(BOB), "N") == nobody.replace("999", "N")
            bob_gone = await call(alice, "memory_forget", {"ids": [BOB]})
            nobody_gone = await call(alice, "memory_forget", {"ids": [999]})
            assert bob_gone == {**nobody_gone, "missing": [BOB]} and bob_gone["count"] == 0
            for name in ("memory_search", "memory_list", "memory_context"):
                assert "takes no argument user" in await fail(alice, name, {"user": "bob"})
            # The shared memory: seen, not changed.
            assert "shared memory 3" in await fail(alice, "memory_edit", {"id": SHARED, "text": "x"})
            assert "shared memory 3" in await fail(alice, "memory_forget", {"ids": [SHARED, ALICE]})
            plan = await call(alice, "memory_forget", {"tags": ["ops"], "dry_run": True})
            assert plan["forgotten"] == [ALICE]
            assert _snapshot(either_store) == before  # nothing of bob's, the team's (or alice's) changed
            # The same text as bob's memory: a new memory of alice's, not bob's id coming back.
            added = await call(alice, "memory_add", {"text": "bob keeps the red deploy key"})
            assert added["id"] not in (BOB, SHARED) and added["duplicate"] is False
            shared_text = await call(alice, "memory_add", {"text": "the team deploy key rotates monthly"})
            assert shared_text["id"] != SHARED and shared_text["duplicate"] is False
            done = await call(alice, "memory_forget", {"tags": ["ops"], "confirm": plan["confirm"]})
            assert done["forgotten"] == [ALICE]
        with memories(either_store) as m:  # type: ignore[arg-type]
            owners = {x.id: x.user for x in m.iter()}
        assert owners[added["id"]] == owners[shared_text["id"]] == "alice"
        assert owners[BOB] == "bob" and owners[SHARED] is None and ALICE not in owners

    with serving(either_store) as server:
        anyio.run(scenario, server.url)


def test_a_read_only_token_cannot_write_and_an_admin_token_can_change_everything(
    either_store: Path | str,
) -> None:
    tokens = _fill(either_store)
    before = _snapshot(either_store)

    async def scenario(url: str) -> None:
        async with session(url, tokens["alice-ro"]) as reader:
            names = [tool.name for tool in (await reader.list_tools()).tools]
            assert names == ["memory_search", "memory_context", "memory_get", "memory_list"]
            for tool, arguments in [
                ("memory_add", {"text": "x"}),
                ("memory_edit", {"id": ALICE, "text": "x"}),
                ("memory_forget", {"ids": [ALICE]}),
            ]:
                assert await fail(reader, tool, arguments) == f"Unknown tool: {tool}"
            assert {m["id"] for m in (await call(reader, "memory_list", {}))["memories"]} == {
                ALICE,
                SHARED,
                ALICE_2,
            }
        assert _snapshot(either_store) == before
        async with session(url, tokens["alice"]) as alice:
            tools = {tool.name: tool for tool in (await alice.list_tools()).tools}
            assert len(tools) == 7
            for tool in tools.values():
                assert "user" not in tool.input_schema["properties"], tool.name
        async with session(url, tokens["admin"]) as admin:
            tools = {tool.name: tool for tool in (await admin.list_tools()).tools}
            assert "user" in tools["memory_search"].input_schema["properties"]
            bobs = await call(admin, "memory_list", {"user": "bob"})
            assert [m["id"] for m in bobs["memories"]] == [BOB]
            edited = await call(admin, "memory_edit", {"id": SHARED, "text": "the team key rotates weekly"})
            assert edited["text"] == "the team key rotates weekly"
            assert (await call(admin, "memory_forget", {"ids": [BOB]}))["forgotten"] == [BOB]

    with serving(either_store) as server:
        anyio.run(scenario, server.url)
