"""``remem mcp`` and ``remem serve``: remem's memories as MCP tools for assistants (Claude, Cursor…),
over stdio for one assistant, or over Streamable HTTP for a team (``http``: tokens pin each call).

The package needs the optional extra ``remem[mcp]`` (the MCP SDK). Importing it loads nothing
heavy: the SDK is imported by ``serve`` and ``remem.mcp.server`` only. ``server`` builds the
``MCPServer`` and its tools (``reading``, ``writing``, their argument and result types in
``schemas``), ``scope`` is the pin of a caller (``--user``/``--conversation``, or a token's),
``service`` shares one ``Memories`` between the calls and warms the model up, ``paging`` is
memory_list's cursor, ``stdio`` reads stdin in front of the SDK's transport so that every line gets
an answer, and ``http`` is ``remem serve`` (its connections bounded and timed by ``connections``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from remem.errors import RememError
from remem.mcp.limits import MAX_CONNECTIONS as MAX_CONNECTIONS
from remem.mcp.limits import REQUEST_TIMEOUT as REQUEST_TIMEOUT
from remem.mcp.limits import Limits

if TYPE_CHECKING:
    import remem


MISSING_SDK = (
    "remem mcp needs the MCP SDK, the mcp extra: pip install 'remem[mcp]' "
    "(from a checkout: pip install '.[mcp]')"
)


def require_sdk(command: str = "remem mcp") -> None:
    """Import the MCP SDK; RememError with the install hint (for ``command``) when it (or a recent
    enough one) is absent."""
    try:
        import mcp.server.mcpserver  # noqa: F401, PLC0415 - the extra is optional and slow to import
    except ImportError as exc:
        if (exc.name or "mcp").split(".")[0] not in ("mcp", "mcp_types", "pydantic"):
            raise
        raise RememError(MISSING_SDK.replace("remem mcp", command)) from None


def serve(
    store: str | Path | None = None,
    *,
    user: str | None = None,
    conversation: str | None = None,
    private: bool = False,
    read_only: bool = False,
    model_dir: Path | None = None,
    model: str | None = None,
    embedder: remem.Embedder | None = None,
    note: Callable[[str], None] = lambda message: None,
) -> None:
    """Serve the store over stdio until the client closes stdin (see ``server.build_server``; a new
    store starts with ``model``)."""
    require_sdk()
    from remem.mcp.server import build_server  # noqa: PLC0415

    server = build_server(
        store,
        user=user,
        conversation=conversation,
        private=private,
        read_only=read_only,
        model_dir=model_dir,
        model=model,
        embedder=embedder,
        note=note,
    )
    scope = server.scope.describe()
    note(f"remem mcp: serving over stdio ({scope}{'; read-only' if read_only else ''})")
    server.run("stdio")


def serve_http(
    store: str | Path | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    tls_cert: Path | None = None,
    tls_key: Path | None = None,
    insecure_http: bool = False,
    tls_key_password_file: Path | None = None,
    forwarded_allow_ips: tuple[str, ...] = (),
    max_connections: int = MAX_CONNECTIONS,
    request_timeout: float = REQUEST_TIMEOUT,
    model_dir: Path | None = None,
    embedder: remem.Embedder | None = None,
    note: Callable[[str], None] = lambda message: None,
) -> int | None:
    """Serve the store over Streamable HTTP (``remem.mcp.http``) until SIGTERM or SIGINT, every
    call pinned by its bearer token, at most ``max_connections`` at once, each request arriving
    whole within ``request_timeout`` seconds (``remem.mcp.connections``), believing the
    ``X-Forwarded-Proto`` of the proxies ``forwarded_allow_ips`` names (``Listener``);
    the signal that stopped it. InvalidInputError for an unsafe or incomplete address set-up or
    limit, the store's own errors when it cannot be opened (a missing one is
    not created: ``remem token add`` creates it, with the token its clients need)."""
    require_sdk("remem serve")
    from remem.mcp.http import HttpServer, Listener  # noqa: PLC0415
    from remem.mcp.server import build_server  # noqa: PLC0415

    listener = Listener(
        host, port, tls_cert, tls_key, insecure_http, tls_key_password_file, forwarded_allow_ips
    )
    limits = Limits(max_connections, request_timeout)
    server = build_server(
        store, model_dir=model_dir, embedder=embedder, note=note, create=False, name="remem serve"
    )
    return HttpServer(server, listener, limits=limits, note=note).serve()


def serve_ui(
    store: str | Path | None = None,
    *,
    port: int = 8766,
    model_dir: Path | None = None,
    model: str | None = None,
    embedder: remem.Embedder | None = None,
    note: Callable[[str], None] = lambda message: None,
    opened: Callable[[str], object] | None = None,
) -> int | None:
    """Serve the page (``remem.web``) for the store on 127.0.0.1 only (``port`` 0: any free one), with
    a one-time code that signs one browser in as the store's owner, until SIGTERM or SIGINT: say its
    URL on ``note`` (and hand it to ``opened``, which opens a browser); the signal that stopped it.
    A missing store is created (as ``remem add`` does; a new one starts with ``model``)."""
    require_sdk("remem ui")
    import secrets  # noqa: PLC0415

    from remem.mcp.http import HttpServer, Listener  # noqa: PLC0415
    from remem.mcp.server import build_server  # noqa: PLC0415

    server = build_server(
        store, model_dir=model_dir, model=model, embedder=embedder, note=note, name="remem ui"
    )
    http = HttpServer(server, Listener("127.0.0.1", port), note=note, code=secrets.token_urlsafe(24))
    if opened is not None:
        opened(http.page_url)
    return http.serve()
