"""Commands that add and list memories."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from remem import render
from remem.commands import options as opt
from remem.commands.bulk import BulkReport, check_errors, print_report, read_source, store_entries
from remem.commands.common import (
    EXIT_NOTHING_FOUND,
    embed_document,
    note,
    open_store,
    print_results,
    stdin,
)
from remem.commands.modelsel import embedder_for
from remem.config import DEFAULT_LIST_LIMIT
from remem.errors import InvalidInputError
from remem.index import AddResult, Filters, MemoryStore, NewMemory
from remem.ingest import parse_jsonl, parse_lines
from remem.inputs import clean_name, clean_tags, parse_meta, read_text


def register(app: typer.Typer) -> None:
    """Add these commands to the app."""
    app.command()(add)
    app.command("list")(list_memories)


def add(
    text: Annotated[
        list[str] | None,
        typer.Argument(metavar="TEXT", help="The memory (words are joined); - reads stdin."),
    ] = None,
    lines: Annotated[
        str | None,
        typer.Option("--lines", metavar="FILE", help="Add one memory per non-empty line (- is stdin)."),
    ] = None,
    jsonl: Annotated[
        str | None,
        typer.Option("--jsonl", metavar="FILE", help="Add one memory per JSON object line (- is stdin)."),
    ] = None,
    skip_invalid: Annotated[
        bool,
        typer.Option("--skip-invalid", help="With --lines/--jsonl: add the good lines, report bad ones."),
    ] = False,
    tag: opt.TagOption = None,
    user: opt.UserOption = None,
    conversation: opt.ConversationOption = None,
    role: opt.RoleOption = None,
    meta: Annotated[
        list[str] | None,
        typer.Option("--meta", "-m", metavar="KEY=VALUE", help="key=value metadata; repeatable."),
    ] = None,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Store a memory and print its id; or many at once with --lines / --jsonl.

    The same text in the same user/conversation is stored once: adding it again prints the
    existing id (and says so on stderr) without loading the model. A batch (--lines, --jsonl) is one
    transaction: all of it is added, or nothing; the options give every memory of it their values.
    """
    defaults = NewMemory(
        text="",
        user=clean_name(user, "--user"),
        conversation=clean_name(conversation, "--conversation"),
        role=clean_name(role, "--role"),
        tags=clean_tags(tag),
        meta=parse_meta(meta),
    )
    if lines is not None or jsonl is not None:
        if text or (lines is not None and jsonl is not None):
            raise InvalidInputError("give TEXT, --lines FILE or --jsonl FILE (only one)")
        _add_batch(lines, jsonl, defaults, skip_invalid, json_out, store)
        return
    memory = replace(defaults, text=read_text(text, stdin()))
    with open_store(store, create=True) as opened:
        assert opened is not None
        result = _add_one(opened, memory)
    if json_out:
        typer.echo(render.json_line({"id": result.id, "duplicate": result.duplicate}))
    else:
        typer.echo(str(result.id))
    if result.duplicate:
        note(f"Already stored as memory {result.id}; not added again.")


def _add_batch(
    lines: str | None,
    jsonl: str | None,
    defaults: NewMemory,
    skip_invalid: bool,
    json_out: bool,
    store: Path | None,
) -> None:
    if lines is not None:
        parsed = parse_lines(read_source(lines), defaults)
    else:
        parsed = parse_jsonl(read_source(jsonl or "-"), defaults)
    report = BulkReport(skipped=check_errors(parsed, skip_invalid))
    with open_store(store, create=True) as opened:
        assert opened is not None
        store_entries(opened, parsed.entries, report)
    print_report(report, json_out)


def _add_one(store: MemoryStore, memory: NewMemory) -> AddResult:
    existing = store.find_duplicate(memory)
    if existing is not None:  # re-adding is free: no model load
        return AddResult(id=existing, duplicate=True)
    embedder, stamp = embedder_for(store)
    return store.add(memory, embed_document(embedder, memory.text), stamp)


@opt.with_filters()
def list_memories(
    limit: opt.LimitOption = DEFAULT_LIST_LIMIT,
    filters: Filters = opt.NO_FILTERS,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Show memories, newest first. Exit 1 if there are none."""
    with open_store(store, create=False) as opened:
        memories = [] if opened is None else opened.newest(filters, limit)
    if not memories:
        raise typer.Exit(EXIT_NOTHING_FOUND)
    print_results(memories, json_out, render.memory_record, render.memories_table)
