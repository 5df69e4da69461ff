"""Memories that change, through the tools: memory_add's similar, supersedes and expires, the
include_superseded/include_expired arguments of search, list and context, memory_get's links, and a
pin that cannot supersede what it may not change."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import Client
from mcp_support import call, fail, memories, run, server, warm

import remem
from serve_support import call as http_call
from serve_support import fail as http_fail
from serve_support import serving, session

OLD = "We run Postgres 16 in production"
NEW = "We run Postgres 17 in production"


def test_similar_then_supersedes_hides_the_old_memory_until_asked(either_store: Path | str) -> None:
    app = server(either_store)

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            assert (await call(client, "memory_add", {"text": OLD}))["similar"] == []
            added = await call(client, "memory_add", {"text": NEW})
            assert [s["id"] for s in added["similar"]] == [1] and 0.69 <= added["similar"][0]["score"] <= 1
            linked = await call(client, "memory_add", {"text": NEW, "supersedes": 1})
            assert (linked["id"], linked["duplicate"], linked["supersedes"]) == (2, True, 1)

            found = await call(client, "memory_search", {"query": "postgres production"})
            assert [hit["id"] for hit in found["hits"]] == [2]
            every = await call(
                client, "memory_search", {"query": "postgres production", "include_superseded": True}
            )
            assert {hit["id"]: hit["superseded_by"] for hit in every["hits"]} == {1: 2, 2: None}
            assert [m["id"] for m in (await call(client, "memory_list", {}))["memories"]] == [2]
            listed = await call(client, "memory_list", {"include_superseded": True})
            assert [m["id"] for m in listed["memories"]] == [2, 1]
            context = await call(client, "memory_context", {"query": "postgres", "similar": 2})
            assert [item["id"] for item in context["items"]] == [2]
            context = await call(
                client, "memory_context", {"query": "postgres", "similar": 2, "include_superseded": True}
            )
            assert sorted(item["id"] for item in context["items"]) == [1, 2]
            old = (await call(client, "memory_get", {"ids": [1]}))["memories"][0]
            assert (old["superseded_by"], old["superseded_at"] is not None, old["expires_at"]) == (
                2,
                True,
                None,
            )

            message = await fail(client, "memory_add", {"text": "We run Postgres 18", "supersedes": 1})
            assert message == "supersedes: memory 1 was already superseded by memory 2; supersede 2 instead"
            assert await fail(client, "memory_add", {"text": "x", "supersedes": 99}) == (
                "supersedes: there is no memory 99"
            )

    run(scenario)


def test_expires_is_kept_and_checked(store_dir: Path) -> None:
    app = server(store_dir)

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            added = await call(client, "memory_add", {"text": "The office is closed today", "expires": "12h"})
            got = (await call(client, "memory_get", {"ids": [added["id"]]}))["memories"][0]
            assert got["expires_at"] is not None and got["expires_at"] > got["created_at"]
            wrong = await fail(client, "memory_add", {"text": "later", "expires": "soon"})
            assert wrong.startswith("expires 'soon' is neither a time from now (30m, 12h, 30d, 2w)")
            passed = await fail(client, "memory_add", {"text": "later", "expires": "2020-01-01"})
            assert (
                passed
                == "expires 2020-01-01T00:00:00.000Z has passed: a memory expires at a time still to come"
            )
            assert [m["id"] for m in (await call(client, "memory_list", {}))["memories"]] == [1]

    run(scenario)


def test_an_expired_memory_is_found_only_when_included(store_dir: Path) -> None:
    with memories(store_dir) as store:
        store.add_many([remem.NewMemory("The 2019 offsite is in Lisbon", expires_at="2020-01-01")])
        store.add("The 2027 offsite is in Porto")
    app = server(store_dir)

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            found = await call(client, "memory_search", {"query": "offsite", "mode": "keyword"})
            assert [hit["id"] for hit in found["hits"]] == [2]
            every = await call(
                client, "memory_search", {"query": "offsite", "mode": "keyword", "include_expired": True}
            )
            assert {hit["id"]: hit["expires_at"] for hit in every["hits"]} == {
                1: "2020-01-01T00:00:00.000Z",
                2: None,
            }
            assert [
                m["id"] for m in (await call(client, "memory_list", {"include_expired": True}))["memories"]
            ] == [2, 1]

    run(scenario)


def test_a_pin_cannot_supersede_what_it_may_not_change(store_dir: Path) -> None:
    with memories(store_dir) as store:
        store.add("Bob's salary is 90k", user="bob")
        store.add("The team wiki is at wiki.example", user=None)
    app = server(store_dir, user="alice")

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            others = await fail(client, "memory_add", {"text": "Bob's salary is 95k", "supersedes": 1})
            assert others == "supersedes: there is no memory 1" and "90k" not in others
            shared = await fail(client, "memory_add", {"text": "The wiki moved", "supersedes": 2})
            assert shared.startswith("shared memory 2 (no user) can be changed only without a user pin")

    run(scenario)
    with memories(store_dir) as store:
        assert [m.superseded_by for m in store.get_many([1, 2]).values()] == [None, None]
        assert store.stats().memories == 2


def test_over_streamable_http_with_pinned_tokens_a_user_supersedes_only_their_own(store_dir: Path) -> None:
    """`remem serve` and the SDK's Streamable HTTP client, a bearer token per user: alice's
    correction hides her old fact from her searches until asked; bob naming it is refused without
    a word of its text."""
    with memories(store_dir) as m:
        alice, bob = (m.tokens.add(user=name)[0] for name in ("alice", "bob"))

    async def scenario() -> None:
        with serving(store_dir) as http:
            async with session(http.url, alice) as mcp_session:
                old = (await http_call(mcp_session, "memory_add", {"text": OLD}))["id"]
                added = await http_call(mcp_session, "memory_add", {"text": NEW, "supersedes": old})
                assert added["supersedes"] == old
                query = {"query": "Postgres in production", "mode": "keyword"}
                found = await http_call(mcp_session, "memory_search", query)
                assert [hit["id"] for hit in found["hits"]] == [added["id"]]
                everything = await http_call(
                    mcp_session, "memory_search", {**query, "include_superseded": True}
                )
                assert {hit["id"] for hit in everything["hits"]} == {old, added["id"]}
            async with session(http.url, bob) as mcp_session:
                refused = await http_fail(mcp_session, "memory_add", {"text": "ours", "supersedes": old})
                assert "Postgres" not in refused
        with memories(store_dir) as m:
            assert m.get(old).superseded_by == added["id"]
            assert [mem.text for mem in m.list(user="bob")] == []

    anyio.run(scenario)


def test_a_fact_that_changed_back_is_current_again_through_memory_add(either_store: Path | str) -> None:
    """The fact changed (5432 → 5433) and back: memory_add with the first text again makes memory 1
    current (it supersedes 2), where it used to say duplicate while every search found only 5433."""
    app = server(either_store)
    first, second = (f"The primary database listens on port {port}" for port in (5432, 5433))

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            await call(client, "memory_add", {"text": first})
            await call(client, "memory_add", {"text": second, "supersedes": 1})
            again = await call(client, "memory_add", {"text": first})
            assert (again["id"], again["duplicate"], again["current_again"], again["superseded"]) == (
                1,
                True,
                True,
                [2],
            )
            for mode in ("keyword", "vector", "hybrid"):
                found = await call(client, "memory_search", {"query": "primary database port", "mode": mode})
                assert [hit["id"] for hit in found["hits"]] == [1], mode
            same = await call(client, "memory_add", {"text": first})
            assert (same["duplicate"], same["current_again"], same["superseded"]) == (True, False, [])

    run(scenario)


def test_an_expired_memory_added_again_through_memory_add_is_current_with_its_new_expiry(
    store_dir: Path,
) -> None:
    with memories(store_dir) as store:
        store.add_many([remem.NewMemory("The offsite is in Lisbon", expires_at="2020-01-01")])
    app = server(store_dir)

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            again = await call(client, "memory_add", {"text": "The offsite is in Lisbon", "expires": "7d"})
            assert (again["id"], again["current_again"]) == (1, True)
            found = await call(client, "memory_search", {"query": "offsite", "mode": "keyword"})
            assert [hit["id"] for hit in found["hits"]] == [1]
            assert found["hits"][0]["expires_at"] > found["hits"][0]["created_at"]

    run(scenario)
    with memories(store_dir) as store:
        assert store.forget_expired().forgotten == ()
