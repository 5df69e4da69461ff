"""The pin (--user/--conversation): no argument reaches another user's memories; --read-only: no
writing tools, and a missing store is a tool error on every call, never created."""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from mcp_support import call, fail, memories, run, server, warm

from remem import NewMemory

ALICE_AND_BOB = [
    NewMemory("alice uses the blue deploy key", user="alice", conversation="c1", tags=("ops",)),
    NewMemory("bob uses the red deploy key", user="bob", conversation="c1", tags=("ops",)),
    NewMemory("alice prefers short answers", user="alice", conversation="c2"),
    NewMemory("nobody's deploy key note", tags=("ops",)),
]


def _snapshot(store: Path) -> list[tuple[int, str, str | None]]:
    with memories(store) as other:
        return [(m.id, m.text, m.updated_at) for m in other.iter()]


def test_a_pinned_user_never_reaches_another_users_memories(store_dir: Path) -> None:
    with memories(store_dir) as other:
        other.add_many(ALICE_AND_BOB)
    before = _snapshot(store_dir)
    app = server(store_dir, user="alice")

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            for mode in ("hybrid", "vector", "keyword"):
                found = await call(client, "memory_search", {"query": "deploy key", "mode": mode, "k": 10})
                assert {hit["user"] for hit in found["hits"]} == {"alice", None}, mode  # hers and the team's
            listed = await call(client, "memory_list", {"limit": 100})
            assert [m["id"] for m in listed["memories"]] == [4, 3, 1]
            context = await call(client, "memory_context", {"query": "red deploy key bob"})
            assert {item["id"] for item in context["items"]} == {1, 3, 4}
            for name, arguments in [
                ("memory_search", {"query": "deploy", "user": "bob"}),
                ("memory_list", {"user": "bob"}),
                ("memory_forget", {"user": "bob", "confirm": "0123456789abcdef"}),
            ]:
                assert "takes no argument user" in await fail(client, name, arguments)
            got = await call(client, "memory_get", {"ids": [1, 2, 4]})
            assert [m["id"] for m in got["memories"]] == [1, 4] and got["missing"] == [2]
            assert await fail(client, "memory_edit", {"id": 2, "text": "hacked"}) == "there is no memory 2"
            shared = await fail(client, "memory_edit", {"id": 4, "text": "hacked"})
            assert shared.startswith("shared memory 4 (no user) can be changed only without a user pin")
            assert "shared memory 4" in await fail(client, "memory_forget", {"ids": [2, 4]})
            gone = await call(client, "memory_forget", {"ids": [2]})
            assert gone == {"dry_run": False, "count": 0, "forgotten": [], "missing": [2], "confirm": None}
            plan = await call(client, "memory_forget", {"tags": ["ops"], "dry_run": True})
            assert plan["forgotten"] == [1]  # the team's memory tagged ops is not hers to forget
            assert _snapshot(store_dir) == before  # nothing of bob's (or anyone's) changed
            added = await call(
                client, "memory_add", {"text": "alice moved to the green key", "conversation": "c9"}
            )
            with memories(store_dir) as other:
                stored = other.get(added["id"])
            assert (stored.user, stored.conversation) == ("alice", "c9")

    run(scenario)


def test_a_private_pin_leaves_out_the_shared_memories(store_dir: Path) -> None:
    with memories(store_dir) as other:
        other.add_many(ALICE_AND_BOB)
    app = server(store_dir, user="alice", private=True)

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            for mode in ("hybrid", "vector", "keyword"):
                found = await call(client, "memory_search", {"query": "deploy key", "mode": mode, "k": 10})
                assert {hit["user"] for hit in found["hits"]} == {"alice"}, mode
            assert [m["id"] for m in (await call(client, "memory_list", {}))["memories"]] == [3, 1]
            assert (await call(client, "memory_get", {"ids": [4]}))["missing"] == [4]
            assert await fail(client, "memory_edit", {"id": 4, "text": "x"}) == "there is no memory 4"

    run(scenario)


def test_a_pin_on_a_store_of_shared_memories_finds_them(store_dir: Path) -> None:
    """The commonest first-run surprise: memories added by `remem add` (no user), then
    `remem mcp --user me`; they are the team's, so the pinned server finds them."""
    with memories(store_dir) as other:
        other.add("the staging database listens on port 5433")
    app = server(store_dir, user="me")

    async def scenario() -> None:
        async with Client(app) as client:
            found = await call(client, "memory_search", {"query": "staging database port", "mode": "keyword"})
            assert [hit["id"] for hit in found["hits"]] == [1]

    run(scenario)


def test_a_pinned_conversation_confines_reads_and_writes(store_dir: Path) -> None:
    with memories(store_dir) as other:
        other.add_many(ALICE_AND_BOB)
    app = server(store_dir, user="alice", conversation="c1")

    async def scenario() -> None:
        async with Client(app) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            for tool in tools.values():
                assert not {"user", "conversation"} & set(tool.input_schema["properties"]), tool.name
            listed = await call(client, "memory_list", {})
            assert [m["id"] for m in listed["memories"]] == [1]
            assert "takes no argument conversation" in await fail(
                client, "memory_add", {"text": "x", "conversation": "c2"}
            )
            added = await call(client, "memory_add", {"text": "the c1 thread is about keys"})
            with memories(store_dir) as other:
                stored = other.get(added["id"])
            assert (stored.user, stored.conversation) == ("alice", "c1")
            assert (await call(client, "memory_get", {"ids": [3]}))["missing"] == [3]  # alice's, but c2

    run(scenario)


def test_read_only_offers_no_writing_tools_and_never_creates_the_store(store_dir: Path) -> None:
    app = server(store_dir, read_only=True)

    async def scenario() -> None:
        async with Client(app) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names == ["memory_search", "memory_context", "memory_get", "memory_list"]
            for name, arguments in [
                ("memory_search", {"query": "x"}),
                ("memory_context", {}),
                ("memory_get", {"ids": [1]}),
                ("memory_list", {}),
            ]:
                assert await fail(client, name, arguments) == f"no remem store at {store_dir}"
            assert "Unknown tool" in await fail(client, "memory_add", {"text": "x"})
            assert not store_dir.exists()
            with memories(store_dir) as other:  # someone creates it: the server now serves it
                other.add("made by the CLI")
            assert [m["text"] for m in (await call(client, "memory_list", {}))["memories"]] == [
                "made by the CLI"
            ]

    run(scenario)
