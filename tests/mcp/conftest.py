"""tests/mcp: the MCP server (``remem mcp``) driven by the SDK's own client, in-process with the fake
embedder and over stdio with the real model. Skipped when the extra (``remem[mcp]``) is absent."""

from __future__ import annotations

import importlib.util


def _sdk_installed() -> bool:
    try:
        return importlib.util.find_spec("mcp.server.mcpserver") is not None
    except ImportError:
        return False


collect_ignore_glob = [] if _sdk_installed() else ["test_*.py"]
