"""Every tool through the SDK's in-process client, with the fake embedder: results, bounds and
errors, the warm-up (keyword lane, pending adds), forget-by-filter's confirmation, list paging and the
context budget."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_support import FIRST_STORED_PENDING, call, fail, memories, run, server, warm

import remem
from remem import Embeddings, NewMemory
from remem.mcp.server import build_server
from remem.testing import FakeEmbedder

#: What memory_add says of a memory that was not retired before it.
NOT_AGAIN: dict[str, Any] = {"current_again": False, "superseded": []}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_every_tool(store_dir: Path, mode: Any) -> None:
    app = server(store_dir)

    async def scenario() -> None:
        async with Client(app, mode=mode) as client:
            await warm(app)
            first = {"text": "Postgres 16 runs on the main box", "tags": ["ops", "db"], "conversation": "c1"}
            added = await call(client, "memory_add", {**first, "meta": {"host": "main"}, "role": "user"})
            assert added == {
                "id": 1,
                "duplicate": False,
                "embedded": True,
                "supersedes": None,
                **NOT_AGAIN,
                "similar": [],
            }
            again = await call(client, "memory_add", first)
            assert again == {
                "id": 1,
                "duplicate": True,
                "embedded": False,
                "supersedes": None,
                **NOT_AGAIN,
                "similar": [],
            }
            await call(client, "memory_add", {"text": "The login sequence uses short-lived JWTs."})

            found = await call(client, "memory_search", {"query": "postgres main box", "k": 1})
            assert (found["mode"], found["lane_note"], found["notes"]) == ("hybrid", None, [])
            hit = found["hits"][0]
            assert (hit["id"], hit["vector_rank"], hit["keyword_rank"], hit["truncated"]) == (1, 1, 1, False)
            assert (hit["tags"], hit["conversation"], hit["role"], hit["user"]) == (
                ["db", "ops"],
                "c1",
                "user",
                None,
            )
            by_word = await call(client, "memory_search", {"query": "JWTs", "mode": "keyword"})
            assert [h["id"] for h in by_word["hits"]] == [2] and by_word["hits"][0]["vector_rank"] is None
            tagged = await call(client, "memory_search", {"query": "login", "tags": ["ops"]})
            assert [h["id"] for h in tagged["hits"]] == [1]

            got = await call(client, "memory_get", {"ids": [2, 99, 1, 2]})
            assert [m["id"] for m in got["memories"]] == [2, 1] and got["missing"] == [99]
            assert got["memories"][1]["meta"] == {"host": "main"}
            listed = await call(client, "memory_list", {})
            assert [m["id"] for m in listed["memories"]] == [2, 1] and listed["next_cursor"] is None

            edited = await call(client, "memory_edit", {"id": 1, "text": "Postgres 17 runs on the main box"})
            assert (
                edited["updated_at"] is not None and edited["created_at"] == got["memories"][1]["created_at"]
            )
            assert (await call(client, "memory_search", {"query": "17", "mode": "keyword"}))["hits"][0][
                "id"
            ] == 1

            context = await call(client, "memory_context", {"query": "postgres", "recent": 1, "similar": 2})
            assert [(i["id"], i["source"]) for i in context["items"]] == [(2, "recent"), (1, "similar")]
            assert context["prompt"].splitlines()[1].endswith("] (user) Postgres 17 runs on the main box")
            assert not context["cut"] and context["omitted"] == 0

            gone = await call(client, "memory_forget", {"ids": [2, 42]})
            assert gone == {"dry_run": False, "count": 1, "forgotten": [2], "missing": [42], "confirm": None}
            assert (await call(client, "memory_get", {"ids": [2]}))["missing"] == [2]

    run(scenario)


BAD_CALLS = [
    (
        "memory_search",
        {"query": "x", "k": 51},
        "invalid argument k: Input should be less than or equal to 50",
    ),
    ("memory_search", {"query": "x", "k": 0}, "invalid argument k"),
    ("memory_search", {"query": ""}, "invalid argument query"),
    ("memory_search", {}, "missing argument query"),
    ("memory_search", {"query": "x", "mode": "fuzzy"}, "invalid argument mode"),
    ("memory_search", {"query": "x", "min_score": 2}, "invalid argument min_score"),
    ("memory_search", {"query": "x", "mode": "keyword", "min_score": -0.5}, "invalid argument min_score"),
    ("memory_search", {"query": "x", "since": "yesterday morning"}, "since 'yesterday morning' is neither"),
    ("memory_search", {"query": "x", "since": "1d", "until": "2d"}, "since must be before until"),
    ("memory_list", {"tags": ["ok", " "]}, "tags must not be empty"),
    ("memory_search", {"query": "x", "tags": ["t"] * 21}, "invalid argument tags"),
    ("memory_search", {"query": "x", "role": "  "}, "role must not be empty"),
    ("memory_search", {"query": "x", "userr": "bob"}, "memory_search takes no argument userr"),
    ("memory_get", {"ids": []}, "invalid argument ids"),
    ("memory_get", {"ids": list(range(1, 52))}, "invalid argument ids"),
    ("memory_get", {"ids": [0]}, "invalid argument ids.0"),
    ("memory_get", {"ids": "one"}, "invalid argument ids"),
    # JSON's true is not memory 1 (pydantic alone reads it as 1): forgetting [true] would forget it
    ("memory_get", {"ids": [True]}, "invalid argument ids.0: Value error, Input should be a whole number"),
    ("memory_forget", {"ids": [True]}, "invalid argument ids.0: Value error, Input should be a whole number"),
    ("memory_edit", {"id": True, "text": "new"}, "invalid argument id"),
    ("memory_search", {"query": "x", "k": True}, "invalid argument k"),
    ("memory_list", {"limit": False}, "invalid argument limit"),
    ("memory_list", {"limit": 101}, "invalid argument limit"),
    ("memory_list", {"cursor": "not-a-cursor"}, "cursor is not a next_cursor from memory_list"),
    ("memory_context", {"max_chars": 50_001}, "invalid argument max_chars"),
    ("memory_context", {"recent": 51}, "invalid argument recent"),
    ("memory_add", {"text": "   "}, "text is empty"),
    ("memory_add", {"text": "x", "meta": {"k": 1}}, "invalid argument meta.k"),
    ("memory_add", {"text": "x", "created_at": "2020-01-01"}, "memory_add takes no argument created_at"),
    ("memory_edit", {"id": 1}, "give a new text, tags or meta to change"),
    ("memory_edit", {"id": 99, "text": "new"}, "there is no memory 99"),
    ("memory_forget", {}, "give ids, or at least one filter (not both)"),
    ("memory_forget", {"ids": [1], "tags": ["ops"]}, "give ids, or at least one filter (not both)"),
    ("memory_forget", {"ids": list(range(1, 102))}, "invalid argument ids"),
    ("memory_forget", {"tags": ["ops"]}, "1 memory matches; nothing was forgotten"),
    ("memory_forget", {"tags": ["ops"], "confirm": "0123456789abcdef"}, "confirm does not match"),
    ("memory_forget", {"ids": [1], "confirm": "0123456789abcdef"}, "confirm goes with filters"),
    ("no_such_tool", {}, "Unknown tool: no_such_tool"),
]


def test_bad_arguments_are_one_line_tool_errors_and_change_nothing(store_dir: Path) -> None:
    app = server(store_dir)

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            await call(client, "memory_add", {"text": "Postgres 16 runs on the main box", "tags": ["ops"]})
            before = await call(client, "memory_list", {})
            for name, arguments, message in BAD_CALLS:
                said = await fail(client, name, arguments)
                # in the tools' own argument names (the library's), never a command-line option
                assert message in said and not re.search(r"(?<![\w-])--[a-z]", said), (name, arguments, said)
            assert await call(client, "memory_list", {}) == before  # still serving, nothing changed

    run(scenario)


def test_before_warm_up_search_uses_keywords_and_add_stores_pending(store_dir: Path) -> None:
    app = server(store_dir)

    async def scenario() -> None:
        async with Client(app) as client:
            added = await call(client, "memory_add", {"text": "The deploy key rotates every 90 days"})
            assert added == FIRST_STORED_PENDING
            found = await call(client, "memory_search", {"query": "deploy key", "min_score": 0.1})
            assert found["mode"] == "keyword" and [h["id"] for h in found["hits"]] == [1]
            # min_score applies on the keyword lane too: one scale in every mode
            assert found["lane_note"] == "model loading; keyword results only"
            assert (await call(client, "memory_search", {"query": "deploy", "mode": "keyword"}))[
                "lane_note"
            ] is None
            with memories(store_dir) as other:
                assert other.pending_count() == 1
            await warm(app)
            with memories(store_dir) as other:
                assert other.pending_count() == 0
            vector = await call(client, "memory_search", {"query": "rotates deploy key", "mode": "vector"})
            assert [h["id"] for h in vector["hits"]] == [1] and vector["lane_note"] is None
            assert (await call(client, "memory_add", {"text": "another one"}))["embedded"]

    run(scenario)


def test_the_background_warm_up_starts_after_the_first_answer(store_dir: Path) -> None:
    app = server(store_dir, warm_up=True)
    with memories(store_dir) as other:
        other.add("left pending by an earlier run", embed=False)

    async def scenario() -> None:
        async with Client(app) as client:
            assert not app.answered.is_set()
            await client.list_tools()
            for _ in range(200):
                found = await call(client, "memory_search", {"query": "earlier run", "mode": "vector"})
                if found["lane_note"] is None:
                    break
                await anyio_sleep()
            assert found["mode"] == "vector" and [h["id"] for h in found["hits"]] == [1]
        with memories(store_dir) as other:
            assert other.pending_count() == 0

    run(scenario)


async def anyio_sleep() -> None:
    await anyio.sleep(0.05)


class SlowToLoad(FakeEmbedder):
    """A fake model whose first query blocks until ``release()``, like an ONNX session loading."""

    def __init__(self) -> None:
        super().__init__()
        self.loading, self.released, self.loaded = threading.Event(), threading.Event(), threading.Event()

    def release(self) -> None:
        self.released.set()

    def embed_queries(self, texts: Sequence[str]) -> Embeddings:
        if not self.loading.is_set():
            self.loading.set()
            self.released.wait(60)
            self.loaded.set()
        return super().embed_queries(texts)


def test_a_search_waits_for_a_loading_model_at_most_the_bound_and_other_calls_not_at_all(
    store_dir: Path,
) -> None:
    """A search that arrives while the model loads waits for it (without the lock) until
    SEARCH_WAIT_SECONDS, then answers from the keyword lane; list and add answer meanwhile."""
    model = SlowToLoad()  # loads only once released: slower than the bound, however busy the machine
    app = build_server(store_dir, embedder=model)
    with memories(store_dir) as other:
        other.add("the deploy key rotates every 90 days")

    async def scenario() -> None:
        async with Client(app) as client:
            await client.list_tools()  # the warm-up starts once the server has answered
            await anyio.to_thread.run_sync(model.loading.wait)
            searched: dict[str, Any] = {}

            async def search() -> None:
                searched.update(await call(client, "memory_search", {"query": "deploy key"}))

            async with anyio.create_task_group() as group:
                group.start_soon(search)
                await anyio.sleep(0.2)  # the search is sent first (and waits for the model)
                listed = await call(client, "memory_list")
                added = await call(client, "memory_add", {"text": "staging runs on the small box"})
                assert not searched  # both answered while the search was waiting
            assert [m["id"] for m in listed["memories"]] == [1] and not added["embedded"]
            assert not model.loaded.is_set()  # the search gave up waiting: keyword lane, with the note
            assert searched["lane_note"] == "model loading; keyword results only" and searched["hits"]
            again = await call(client, "memory_search", {"query": "deploy key"})
            assert again["lane_note"] == "model loading; keyword results only"  # later ones do not wait
            model.release()
            edited = await call(
                client, "memory_edit", {"id": 1, "text": "the deploy key rotates every 30 days"}
            )
            assert model.loaded.is_set() and edited["text"].endswith("30 days")
            assert (await call(client, "memory_search", {"query": "small box"}))["lane_note"] is None

    run(scenario)


def test_an_unexpected_failure_says_only_which_tool_failed(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("secret memory text")

    monkeypatch.setattr(remem.Memories, "list", broken)
    app = server(store_dir)

    async def scenario() -> None:
        async with Client(app) as client:
            assert await fail(client, "memory_list", {}) == "Error executing tool memory_list"
            assert (await call(client, "memory_add", {"text": "still serving"}))["id"] == 1

    run(scenario)


def test_forget_by_filter_needs_the_dry_runs_confirm(store_dir: Path) -> None:
    app = server(store_dir)
    with memories(store_dir) as other:
        other.add_many([NewMemory(f"ops note {i}", tags=("ops",)) for i in range(3)] + ["a keeper"])

    async def scenario() -> None:
        async with Client(app) as client:
            plan = await call(client, "memory_forget", {"tags": ["ops"], "dry_run": True})
            assert {k: plan[k] for k in ("dry_run", "count", "forgotten", "missing")} == {
                "dry_run": True,
                "count": 3,
                "forgotten": [1, 2, 3],
                "missing": [],
            }
            assert "3 memories match; nothing was forgotten" in await fail(
                client, "memory_forget", {"tags": ["ops"]}
            )
            with memories(store_dir) as other:  # the store changes between the dry run and the real one
                other.add("ops note 4", tags=["ops"])
            stale = await fail(client, "memory_forget", {"tags": ["ops"], "confirm": plan["confirm"]})
            assert stale.startswith("confirm does not match what these filters select now (4 memories match)")
            again = await call(client, "memory_forget", {"tags": ["ops"], "dry_run": True})
            assert again["count"] == 4 and again["confirm"] != plan["confirm"]
            done = await call(client, "memory_forget", {"tags": ["ops"], "confirm": again["confirm"]})
            assert (done["dry_run"], done["forgotten"], done["missing"]) == (False, [1, 2, 3, 5], [])
            left = await call(client, "memory_list", {})
            assert [m["text"] for m in left["memories"]] == ["a keeper"]
            empty = await call(client, "memory_forget", {"tags": ["ops"], "dry_run": True})
            none = await call(client, "memory_forget", {"tags": ["ops"], "confirm": empty["confirm"]})
            assert none["forgotten"] == []
            ids_plan = await call(client, "memory_forget", {"ids": [4, 9], "dry_run": True})
            assert (ids_plan["forgotten"], ids_plan["missing"], ids_plan["confirm"]) == ([4], [9], None)

    run(scenario)


def test_list_pages_cover_every_memory_exactly_once(store_dir: Path) -> None:
    """Newest first, stable while the store changes: memories sharing a created_at (a batch), a
    memory added and one forgotten between pages."""
    app = server(store_dir)
    with memories(store_dir) as other:
        batch = [NewMemory(f"same moment {i}", created_at="2026-01-01T00:00:00Z") for i in range(7)]
        other.add_many([*batch, *(NewMemory(f"later {i}", created_at=f"2026-01-0{i + 2}") for i in range(5))])

    async def scenario() -> None:
        async with Client(app) as client:
            seen: list[int] = []
            page = await call(client, "memory_list", {"limit": 3})
            while True:
                seen += [m["id"] for m in page["memories"]]
                if len(seen) == 6:
                    with memories(store_dir) as other:
                        other.add("added while paging (newer than every page)")
                        other.forget([3])  # not listed yet: it will be missing, nothing else
                if page["next_cursor"] is None:
                    break
                page = await call(client, "memory_list", {"limit": 3, "cursor": page["next_cursor"]})
            assert seen == [12, 11, 10, 9, 8, 7, 6, 5, 4, 2, 1]

    run(scenario)


@pytest.mark.parametrize("max_chars", [200, 300, 1_000, 2_000])
def test_context_stays_within_its_budget(store_dir: Path, max_chars: int) -> None:
    app = server(store_dir)
    with memories(store_dir) as other:
        other.add_many([f"memory {i} " + "about the billing service " * (i % 5 + 1) for i in range(30)])

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            arguments = {"query": "billing", "recent": 20, "similar": 10, "max_chars": max_chars}
            context = await call(client, "memory_context", arguments)
            assert len(context["prompt"]) <= max_chars
            assert context["prompt"] == "\n".join(item["line"] for item in context["items"])
            assert all(not item["truncated"] for item in context["items"][:-1])
            whole = await call(client, "memory_context", {**arguments, "max_chars": 50_000})
            assert not whole["cut"] and whole["omitted"] == 0 and len(whole["items"]) > 20
            assert context["cut"] and context["omitted"] == len(whole["items"]) - len(context["items"])
            kept = len(context["items"])
            assert context["items"][: kept - 1] == whole["items"][: kept - 1]  # the same order, cut short

    run(scenario)


def test_long_texts_are_cut_in_search_and_list_but_whole_in_get(store_dir: Path) -> None:
    app = server(store_dir)
    long_text = "word " * 1_000

    async def scenario() -> None:
        async with Client(app) as client:
            await call(client, "memory_add", {"text": long_text})
            hit = (await call(client, "memory_search", {"query": "word"}))["hits"][0]
            listed = (await call(client, "memory_list", {}))["memories"][0]
            for cut in (hit, listed):
                assert cut["truncated"] and len(cut["text"]) == 2_000 and cut["text"].endswith("…")
            whole = (await call(client, "memory_get", {"ids": [1]}))["memories"][0]
            assert not whole["truncated"] and whole["text"] == long_text.strip()

    run(scenario)
