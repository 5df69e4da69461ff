"""Who wrote a memory, as the MCP servers record it: on `remem serve` (real HTTP, the SDK's own
client) a token's writes carry its name, whatever its arguments say, and another token cannot
write in its name; `remem mcp` (no token) records ``mcp``. memory_get and memory_list show it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_support import call as call_in_process
from mcp_support import memories, run, server

from remem.errors import InvalidInputError
from serve_support import call, fail, serving, session


def _tokens(store: Path | str) -> dict[str, str]:
    with memories(store) as m:  # type: ignore[arg-type]
        return {
            "alice": m.tokens.add(user="alice")[0],
            "bob": m.tokens.add(user="bob")[0],
            "admin": m.tokens.add(user=None)[0],
        }


def test_a_tokens_writes_carry_its_name_and_no_argument_forges_another(either_store: Path | str) -> None:
    tokens = _tokens(either_store)

    async def scenario(url: str) -> None:
        async with session(url, tokens["alice"]) as alice:
            mine = await call(alice, "memory_add", {"text": "alice likes tea"})
            # A writer named in the arguments is refused; one in meta is only meta.
            refused = await fail(alice, "memory_add", {"text": "alice says she is bob", "written_by": "bob"})
            assert refused == "memory_add takes no argument written_by"
            await call(alice, "memory_add", {"text": "alice writes as bob", "meta": {"written_by": "bob"}})
            got = await call(alice, "memory_get", {"ids": [mine["id"]]})
            assert got["memories"][0]["written_by"] == "alice"
            listed = await call(alice, "memory_list", {"limit": 10})
            assert {m["written_by"] for m in listed["memories"]} == {"alice"}
        async with session(url, tokens["admin"]) as admin:
            await call(admin, "memory_add", {"text": "a shared note"})
            listed = await call(admin, "memory_list", {"limit": 10})
            writers = {m["text"]: m["written_by"] for m in listed["memories"]}
        assert writers == {
            "alice likes tea": "alice",
            "alice writes as bob": "alice",
            "a shared note": "admin",
        }

    with serving(either_store) as served:
        anyio.run(scenario, served.url)
    with memories(either_store) as m:  # type: ignore[arg-type]
        assert {x.written_by for x in m.iter()} == {"alice", "admin"}


def test_remem_mcp_without_a_token_records_mcp(tmp_path: Path) -> None:
    app = server(tmp_path / "store")

    async def scenario() -> None:
        async with Client(app) as client:
            added = await call_in_process(client, "memory_add", {"text": "the deploy window opens at nine"})
            got = await call_in_process(client, "memory_get", {"ids": [added["id"]]})
            assert got["memories"][0]["written_by"] == "mcp"

    run(scenario)


@pytest.mark.parametrize("name", ["cli", "import", "mcp", "ui", " cli "])
def test_no_token_takes_the_name_of_a_writer_without_one(tmp_path: Path, name: str) -> None:
    with memories(tmp_path / "store") as m:
        with pytest.raises(InvalidInputError, match="choose another name"):
            m.tokens.add(user="cli", name=name)
        assert m.tokens.add(user="cli")[1].name == "cli-2"  # a user named so gets the next name
        assert [token.name for token in m.tokens.list()] == ["cli-2"]
