"""Commands that write and read memories: add, list, export."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from remem import render
from remem.commands.common import (
    EXIT_NOTHING_FOUND,
    embed_document,
    embedder_for,
    filters_from,
    open_store,
    print_results,
    stdin,
)
from remem.commands.options import (
    ConversationOption,
    JsonOption,
    LimitOption,
    MetaFilterOption,
    RoleOption,
    SinceOption,
    StoreOption,
    TagOption,
    UntilOption,
    UserOption,
)
from remem.config import DEFAULT_LIST_LIMIT
from remem.errors import RememError
from remem.index import AddResult, MemoryStore, NewMemory
from remem.inputs import clean_name, clean_tags, parse_meta, read_text


def register(app: typer.Typer) -> None:
    """Add these commands to the app."""
    app.command()(add)
    app.command("list")(list_memories)
    app.command()(export)


def add(
    text: Annotated[
        list[str] | None,
        typer.Argument(metavar="TEXT", help="The memory (words are joined); - reads stdin."),
    ] = None,
    tag: TagOption = None,
    user: UserOption = None,
    conversation: ConversationOption = None,
    role: RoleOption = None,
    meta: Annotated[
        list[str] | None,
        typer.Option("--meta", "-m", metavar="KEY=VALUE", help="key=value metadata; repeatable."),
    ] = None,
    json_out: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Store a memory and print its id.

    The same text in the same user/conversation is stored once: adding it again prints the
    existing id (and says so on stderr) without loading the model.
    """
    memory = NewMemory(
        text=read_text(text, stdin()),
        user=clean_name(user, "--user"),
        conversation=clean_name(conversation, "--conversation"),
        role=clean_name(role, "--role"),
        tags=clean_tags(tag),
        meta=parse_meta(meta),
    )
    with open_store(store, create=True) as opened:
        assert opened is not None
        result = _add_one(opened, memory)
    if json_out:
        typer.echo(render.json_line({"id": result.id, "duplicate": result.duplicate}))
    else:
        typer.echo(str(result.id))
    if result.duplicate:
        typer.echo(f"Already stored as memory {result.id}; not added again.", err=True)


def _add_one(store: MemoryStore, memory: NewMemory) -> AddResult:
    existing = store.find_duplicate(memory)
    if existing is not None:  # re-adding is free: no model load
        return AddResult(id=existing, duplicate=True)
    embedder, stamp = embedder_for(store)
    return store.add(memory, embed_document(embedder, memory.text), stamp)


def list_memories(
    limit: LimitOption = DEFAULT_LIST_LIMIT,
    user: UserOption = None,
    conversation: ConversationOption = None,
    role: RoleOption = None,
    tag: TagOption = None,
    meta: MetaFilterOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    json_out: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Show memories, newest first. Exit 1 if there are none."""
    filters = filters_from(user, conversation, tag, role=role, meta=meta, since=since, until=until)
    with open_store(store, create=False) as opened:
        memories = [] if opened is None else opened.newest(filters, limit)
    if not memories:
        raise typer.Exit(EXIT_NOTHING_FOUND)
    print_results(memories, json_out, render.memory_record, render.memories_table)


def export(
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write to this file (0600, atomically) instead of stdout."
        ),
    ] = None,
    store: StoreOption = None,
) -> None:
    """Write every memory as JSON Lines, in id order.

    Every field but the vector: id, text, sha256, created_at, user, conversation, role, tags, meta.
    """
    with open_store(store, create=False) as opened:
        records = () if opened is None else opened.iter_all()
        if output is None:
            for memory in records:
                typer.echo(render.json_line(render.memory_record(memory)))
            return
        from remem.atomic import atomic_writer  # noqa: PLC0415

        try:
            with atomic_writer(output.expanduser()) as handle:
                for memory in records:
                    handle.write(render.json_line(render.memory_record(memory)).encode() + b"\n")
        except OSError as exc:
            raise RememError(f"cannot write {output}: {exc.strerror or exc}") from exc
