"""``remem mcp``: remem's memories as MCP tools for assistants (Claude, Cursor…), over stdio.

The package needs the optional extra ``remem[mcp]`` (the MCP SDK). Importing it loads nothing
heavy: the SDK is imported by ``serve`` and ``remem.mcp.server`` only. ``server`` builds the
``MCPServer`` and its tools (``reading``, ``writing``, their argument and result types in
``schemas``), ``scope`` is the ``--user``/``--conversation`` pin, ``service`` shares one
``Memories`` between the calls and warms the model up, ``paging`` is memory_list's cursor, and
``stdio`` reads stdin in front of the SDK's transport so that every line gets an answer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from remem.errors import RememError

if TYPE_CHECKING:
    import remem

MISSING_SDK = (
    "remem mcp needs the MCP SDK, the mcp extra: pip install 'remem[mcp]' "
    "(from a checkout: pip install '.[mcp]')"
)


def require_sdk() -> None:
    """Import the MCP SDK; RememError with the install hint when it (or a recent enough one) is absent."""
    try:
        import mcp.server.mcpserver  # noqa: F401, PLC0415 - the extra is optional and slow to import
    except ImportError as exc:
        if (exc.name or "mcp").split(".")[0] not in ("mcp", "mcp_types", "pydantic"):
            raise
        raise RememError(MISSING_SDK) from None


def serve(
    store: str | Path | None = None,
    *,
    user: str | None = None,
    conversation: str | None = None,
    read_only: bool = False,
    model_dir: Path | None = None,
    embedder: remem.Embedder | None = None,
    note: Callable[[str], None] = lambda message: None,
) -> None:
    """Serve the store over stdio until the client closes stdin (see ``server.build_server``)."""
    require_sdk()
    from remem.mcp.server import build_server  # noqa: PLC0415

    server = build_server(
        store,
        user=user,
        conversation=conversation,
        read_only=read_only,
        model_dir=model_dir,
        embedder=embedder,
        note=note,
    )
    scope = server.service.scope.describe()
    note(f"remem mcp: serving over stdio ({scope}{'; read-only' if read_only else ''})")
    server.run("stdio")
