"""Helpers of the MCP tests: a server over a store with the fake embedder, and tool calls through
the SDK's own client that check what every result must be (structured, or a one-line error)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

import remem
from remem.mcp.server import RememServer, build_server
from remem.testing import FakeEmbedder

#: ``memory_add``'s result for the first memory of a store, stored before the model loaded.
FIRST_STORED_PENDING = {
    "id": 1,
    "duplicate": False,
    "embedded": False,
    "supersedes": None,
    "current_again": False,
    "superseded": [],
    "similar": [],
}


def server(store: Path, **options: Any) -> RememServer:
    """A server for ``store`` embedding with a FakeEmbedder; no background warm-up unless asked."""
    options.setdefault("warm_up", False)
    return build_server(store, embedder=FakeEmbedder(), **options)


def memories(store: Path) -> remem.Memories:
    """The store opened directly (another client of the same store), with the fake embedder."""
    return remem.open(store, embedder=FakeEmbedder())


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    """Run an async test body."""
    anyio.run(scenario)


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tool's structured result; the call must succeed."""
    result = await client.call_tool(name, arguments or {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def fail(client: Client, name: str, arguments: dict[str, Any] | None = None) -> str:
    """A tool's error message; the call must fail with one line and no traceback."""
    result = await client.call_tool(name, arguments or {})
    assert result.is_error, result.structured_content
    assert len(result.content) == 1
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert text and "\n" not in text and "Traceback" not in text, text
    return text


async def warm(server: RememServer) -> None:
    """Run the warm-up now (the server was built without the background one)."""
    await anyio.to_thread.run_sync(server.service.warm_up)
