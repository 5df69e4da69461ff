"""tests/web: the page of ``remem serve`` (``remem.web``), its routes driven in-process through
Starlette's TestClient with the fake embedder. Skipped when the ``mcp`` extra (the SDK, Jinja2) is absent."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def _extra_installed() -> bool:
    try:
        return all(importlib.util.find_spec(name) is not None for name in ("mcp.server.mcpserver", "jinja2"))
    except ImportError:
        return False


collect_ignore_glob = [] if _extra_installed() else ["test_*.py"]


@pytest.fixture(params=["local", "postgres"])
def either_store(request: pytest.FixtureRequest, store_dir: Path) -> Path | str:
    """A new store of each back-end: a local directory, then a PostgreSQL URL (real server)."""
    if request.param == "local":
        return store_dir
    url: str = request.getfixturevalue("postgres_url")
    return url
