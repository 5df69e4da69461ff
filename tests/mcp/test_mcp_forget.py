"""memory_forget by filter forgets exactly the memories its dry run listed (issue 24, finding 2), on
both back-ends, through the SDK's own client."""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from mcp_support import call, fail, memories, run, server


def test_a_confirm_forgets_only_the_memories_its_dry_run_listed(either_store: Path) -> None:
    """The issue's sequence: a dry run lists memory 1 (tagged ops); a shell forgets 1 and adds
    another ops memory (2); confirming must not forget 2, which nobody reviewed."""
    app = server(either_store)
    with memories(either_store) as shell:
        shell.add("rotate the ops deploy key", tags=["ops"])

    async def scenario() -> None:
        async with Client(app) as client:
            plan = await call(client, "memory_forget", {"tags": ["ops"], "dry_run": True})
            assert (plan["forgotten"], plan["count"]) == ([1], 1)
            with memories(either_store) as shell:
                shell.forget([1])
                assert shell.add("page the ops on-call", tags=["ops"]).id == 2
            refused = await fail(client, "memory_forget", {"tags": ["ops"], "confirm": plan["confirm"]})
            assert "nothing was forgotten: check them again with dry_run" in refused
            old_way = {"tags": ["ops"], "confirm_count": 1}  # what forgot memory 2 before
            assert (
                await fail(client, "memory_forget", old_way)
                == "memory_forget takes no argument confirm_count"
            )
            assert [m["id"] for m in (await call(client, "memory_list", {}))["memories"]] == [2]

            reviewed = await call(client, "memory_forget", {"tags": ["ops"], "dry_run": True})
            with memories(either_store) as shell:  # an edit changes what was reviewed, too
                shell.edit(2, "page the ops on-call, then the lead")
            assert "nothing was forgotten" in await fail(
                client, "memory_forget", {"tags": ["ops"], "confirm": reviewed["confirm"]}
            )
            reviewed = await call(client, "memory_forget", {"tags": ["ops"], "dry_run": True})
            done = await call(client, "memory_forget", {"tags": ["ops"], "confirm": reviewed["confirm"]})
            assert (done["forgotten"], done["missing"]) == ([2], [])
            assert (await call(client, "memory_list", {}))["memories"] == []

    run(scenario)


def test_filters_that_match_nothing_forget_nothing_without_a_confirm(store_dir: Path) -> None:
    """Issue 26 #6: zero matches answered "to forget them, call again with confirm_count=0" (later: "0
    memories match; … list them with dry_run, then call again with … its confirm"): nothing to confirm."""
    app = server(store_dir)
    with memories(store_dir) as shell:
        shell.add("rotate the ops deploy key", tags=["ops"])

    async def scenario() -> None:
        async with Client(app) as client:
            nothing = {"dry_run": False, "count": 0, "forgotten": [], "missing": [], "confirm": None}
            assert await call(client, "memory_forget", {"tags": ["no-such-tag"]}) == nothing
            plan = await call(client, "memory_forget", {"tags": ["no-such-tag"], "dry_run": True})
            assert (plan["count"], plan["forgotten"]) == (0, [])
            confirmed = {"tags": ["no-such-tag"], "confirm": plan["confirm"]}
            assert await call(client, "memory_forget", confirmed) == nothing
            assert [m["id"] for m in (await call(client, "memory_list", {}))["memories"]] == [1]

    run(scenario)
