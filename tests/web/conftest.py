"""tests/web: the page of ``remem serve`` (``remem.web``), its routes driven in-process through
Starlette's TestClient with the fake embedder. Skipped when the ``mcp`` extra (the SDK, Jinja2) is absent."""

from __future__ import annotations

import importlib.util


def _extra_installed() -> bool:
    try:
        return all(importlib.util.find_spec(name) is not None for name in ("mcp.server.mcpserver", "jinja2"))
    except ImportError:
        return False


collect_ignore_glob = [] if _extra_installed() else ["test_*.py"]
