"""``remem mcp``: serve the memories to an assistant over MCP (stdio). The server is ``remem.mcp``;
its SDK (the optional extra ``remem[mcp]``) is imported only when this command runs."""

from typing import Annotated

import typer

from remem.commands import options as opt
from remem.commands.common import invocation, note
from remem.mcp import serve


def register(app: typer.Typer) -> None:
    """Add this command to the app."""
    app.command(name="mcp")(mcp)


def mcp(
    user: Annotated[
        str | None,
        typer.Option(
            "--user",
            "-u",
            metavar="NAME",
            help="Pin: every tool call sees and writes only this user's memories.",
        ),
    ] = None,
    conversation: Annotated[
        str | None,
        typer.Option(
            "--conversation", "-c", metavar="ID", help="Pin: every tool call stays in this conversation."
        ),
    ] = None,
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
        read_only=read_only,
        model_dir=settings.model_dir,
        embedder=settings.embedder,
        note=note,
    )
