"""``remem mcp`` and ``remem serve``: serve the memories to assistants over MCP, on stdio or over
HTTP. The servers are ``remem.mcp``; its SDK (the optional extra ``remem[mcp]``) is imported only
when one of these commands runs."""

import os
import signal
import webbrowser
from pathlib import Path
from typing import Annotated, Any

import typer

from remem.commands import options as opt
from remem.commands.common import EXIT_INTERRUPTED, invocation, missing_store, note
from remem.errors import StoreNotFoundError
from remem.mcp import MAX_CONNECTIONS, REQUEST_TIMEOUT, serve, serve_http, serve_ui

#: A server's concurrency comes from its requests, so each search runs its vector products on one
#: thread: with OpenBLAS's own threads (2 here) the server spent 85 ms of CPU per search of 10,000
#: memories against 40 ms with one (the rest spinning), and p50 with 8 clients fell from 298 to
#: 250 ms (bench/serve.py, 2 cores). Set before numpy loads; a value the user set is kept.
SERVER_THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def register(app: typer.Typer) -> None:
    """Add these commands to the app."""
    app.command(name="mcp")(mcp)
    app.command(name="serve")(serve_command)
    app.command(name="ui")(ui_command)


def mcp(
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            "-u",
            metavar="NAME",
            help="Pin: every tool call writes this user's memories and sees them and the shared ones "
            "(memories without a user).",
        ),
    ] = None,
    conversation: Annotated[
        str | None,
        typer.Option(
            "--conversation", "-c", metavar="ID", help="Pin: every tool call stays in this conversation."
        ),
    ] = None,
    private: Annotated[
        bool,
        typer.Option("--private", help="With --user: see only this user's memories, not the shared ones."),
    ] = False,
    read_only: Annotated[
        bool,
        typer.Option("--read-only", help="Offer no tools that add, edit or forget; never create the store."),
    ] = False,
    store: opt.StoreOption = None,
) -> None:
    """Serve memories to an assistant over MCP on stdin/stdout: memory_search, memory_context,
    memory_get, memory_list, memory_add, memory_edit, memory_forget. Needs the mcp extra:
    pip install 'remem[mcp]' (from a checkout: pip install '.[mcp]').

    Configure your client to run `remem mcp --user NAME`. Notes go to stderr; stdout is the protocol.
    """
    settings = invocation()
    serve(
        store,
        user=user,
        conversation=conversation,
        private=private,
        read_only=read_only,
        model_dir=settings.model_dir,
        model=settings.model,
        embedder=settings.embedder,
        note=note,
    )


def serve_command(
    host: Annotated[
        str,
        typer.Option(
            "--host", metavar="ADDRESS", help="Address to listen on (beyond loopback: see --tls-cert)."
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535, metavar="PORT", help="Port to listen on (0: any free one)."),
    ] = 8765,
    tls_cert: Annotated[
        Path | None,
        typer.Option("--tls-cert", metavar="FILE", help="Serve HTTPS with this certificate (PEM)."),
    ] = None,
    tls_key: Annotated[
        Path | None, typer.Option("--tls-key", metavar="FILE", help="The certificate's private key (PEM).")
    ] = None,
    tls_key_password_file: Annotated[
        Path | None,
        typer.Option("--tls-key-password-file", metavar="FILE", help="A file with the key's passphrase."),
    ] = None,
    insecure_http: Annotated[
        bool,
        typer.Option(
            "--insecure-http",
            help="Serve plain HTTP on an address other machines reach (a TLS proxy in front).",
        ),
    ] = False,
    forwarded_allow_ips: Annotated[
        str,
        typer.Option(
            "--forwarded-allow-ips",
            metavar="ADDRESSES",
            help="Believe X-Forwarded-Proto from these proxies (comma-separated IPs or networks; *: any).",
        ),
    ] = "",
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            min=1,
            metavar="N",
            help="Connections served at once; more get 503 at once (kept below ulimit -n).",
        ),
    ] = MAX_CONNECTIONS,
    request_timeout: Annotated[
        float,
        typer.Option(
            "--request-timeout",
            min=0.001,
            metavar="SECONDS",
            help="A request must arrive whole (headers and body) in this time, or gets 408.",
        ),
    ] = REQUEST_TIMEOUT,
    store: opt.StoreOption = None,
) -> None:
    """Serve memories to a team's assistants over MCP (Streamable HTTP at /mcp; GET /healthz), and
    a page for people at / (sign in with a token).
    Needs the mcp extra: pip install 'remem[mcp]'.

    Every request needs a token from `remem token add --user NAME` (Authorization: Bearer TOKEN),
    and every call is pinned to that token's user. SIGTERM stops it gracefully.
    """
    for name, value in SERVER_THREADS.items():
        os.environ.setdefault(name, value)
    try:
        proxies = tuple(part.strip() for part in forwarded_allow_ips.split(",") if part.strip())
        listening = {
            "host": host,
            "port": port,
            "insecure_http": insecure_http,
            "forwarded_allow_ips": proxies,
        }
        tls = {"tls_cert": tls_cert, "tls_key": tls_key, "tls_key_password_file": tls_key_password_file}
        limits = {"max_connections": max_connections, "request_timeout": request_timeout}
        stopped_by = _serve_http(store, **listening, **tls, **limits)
    except StoreNotFoundError as exc:  # not created: a token is needed first, and a typo must not make one
        raise StoreNotFoundError(missing_store(exc, store, "token add", "--user NAME")) from None
    if stopped_by == signal.SIGINT:
        raise typer.Exit(EXIT_INTERRUPTED)


def _serve_http(store: str | None, **options: Any) -> int | None:
    settings = invocation()
    return serve_http(
        store,
        **options,
        model_dir=settings.model_dir,
        embedder=settings.embedder,
        note=note,
    )


def ui_command(
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535, metavar="PORT", help="Port on 127.0.0.1 (0: any free one)."),
    ] = 8766,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the page in the default browser.")
    ] = False,
    store: opt.StoreOption = None,
) -> None:
    """Review, search and change the memories in a browser: serves the page on 127.0.0.1 and prints
    its URL with a one-time sign-in code (it works once). Needs the mcp extra: pip install 'remem[mcp]'.
    """
    for name, value in SERVER_THREADS.items():
        os.environ.setdefault(name, value)
    settings = invocation()
    stopped_by = serve_ui(
        store,
        port=port,
        model_dir=settings.model_dir,
        model=settings.model,
        embedder=settings.embedder,
        note=note,
        opened=webbrowser.open if open_browser else None,
    )
    if stopped_by == signal.SIGINT:
        raise typer.Exit(EXIT_INTERRUPTED)
