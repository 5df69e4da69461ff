"""tests/mcp: the MCP server (``remem mcp``) driven by the SDK's own client, in-process with the fake
embedder and over stdio with the real model. Skipped when the extra (``remem[mcp]``) is absent."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def _sdk_installed() -> bool:
    try:
        return importlib.util.find_spec("mcp.server.mcpserver") is not None
    except ImportError:
        return False


collect_ignore_glob = [] if _sdk_installed() else ["test_*.py"]


@pytest.fixture(params=["local", "postgres"])
def either_store(request: pytest.FixtureRequest, store_dir: Path) -> Path | str:
    """A new store of each back-end: a local directory, then a PostgreSQL URL (real server)."""
    if request.param == "local":
        return store_dir
    url: str = request.getfixturevalue("postgres_url")
    return url
