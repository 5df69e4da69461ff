"""Commands that change stored memories: edit and forget."""

from __future__ import annotations

from typing import Annotated

import typer

from remem import render
from remem.commands import options as opt
from remem.commands.common import (
    EXIT_NOTHING_FOUND,
    embed_document,
    note,
    open_store,
    print_results,
    stdin,
    warn,
)
from remem.commands.modelsel import embedder_for
from remem.errors import InvalidInputError
from remem.index import Filters
from remem.inputs import read_text


def register(app: typer.Typer) -> None:
    """Add these commands to the app."""
    app.command()(edit)
    app.command()(forget)


def edit(
    memory_id: Annotated[int, typer.Argument(metavar="ID", help="The memory to change.")],
    text: Annotated[
        list[str] | None,
        typer.Argument(metavar="TEXT", help="Its new text (words are joined); - reads stdin."),
    ] = None,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Replace a memory's text: re-embeds it, keeps its id and created_at, records updated_at."""
    new_text = read_text(text, stdin())
    with open_store(store, create=False) as opened:
        if opened is None or not opened.records.get_many([memory_id]):
            raise InvalidInputError(f"there is no memory {memory_id}")
        embedder, stamp = embedder_for(opened)
        memory = opened.edit(memory_id, new_text, embed_document(embedder, new_text), stamp)
    print_results([memory], json_out, render.memory_record, render.memories_table)


@opt.with_filters()
def forget(
    ids: Annotated[list[int] | None, typer.Argument(metavar="ID", help="Memories to delete.")] = None,
    where: Annotated[bool, typer.Option("--where", help="Delete every memory the filters select.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be deleted.")] = False,
    filters: Filters = opt.NO_FILTERS,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Delete memories by id, or with --where every memory the filters select (at least one filter).

    Prints what was deleted (with --dry-run: what would be). Exit 1 if nothing matched.
    """
    if bool(ids) == where:
        raise InvalidInputError("give memory ids, or --where with filters (not both)")
    if where and filters.is_empty():
        raise InvalidInputError("--where needs at least one filter (to forget everything, delete the store)")
    if not where and not filters.is_empty():
        raise InvalidInputError("filters only apply with --where")
    with open_store(store, create=False) as opened:
        if opened is None:
            raise typer.Exit(EXIT_NOTHING_FOUND)
        chosen = opened.records.candidate_ids(filters) if where else sorted(set(ids or []))
        found = opened.records.get_many(chosen)
        for missing in sorted(set(chosen) - set(found)):
            warn(f"there is no memory {missing}")
        if found and not dry_run:
            opened.forget(sorted(found))
    if not found:
        raise typer.Exit(EXIT_NOTHING_FOUND)
    print_results([found[i] for i in sorted(found)], json_out, render.memory_record, render.memories_table)
    verb = "Would forget" if dry_run else "Forgot"
    note(f"{verb} {len(found)} memor{'y' if len(found) == 1 else 'ies'}.")
