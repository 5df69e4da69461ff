"""Commands that look at memories: context (for LLM prompts), show, stats."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from remem import render
from remem.commands import options as opt
from remem.commands.common import EXIT_NOTHING_FOUND, open_store, stdin
from remem.commands.search import DEFAULT_SEARCH_MODE, search_once
from remem.index import Filters, Memory, MemoryStore
from remem.inputs import check_min_score, read_text


class Merge(str, Enum):
    """How recent and similar memories are combined."""

    APPEND = "append"  # recent, then similar
    PREPEND = "prepend"  # similar, then recent
    INTERLEAVE = "interleave"  # recent, similar, recent, similar…


def register(app: typer.Typer) -> None:
    """Add these commands to the app."""
    app.command()(context)
    app.command()(show)
    app.command()(stats)


def merge(recent: list[Memory], similar: list[Memory], how: Merge) -> list[tuple[str, Memory]]:
    """The two lists combined as asked, each memory once (its first place), tagged with its source."""
    tagged_recent = [("recent", m) for m in recent]
    tagged_similar = [("similar", m) for m in similar]
    if how is Merge.APPEND:
        ordered = tagged_recent + tagged_similar
    elif how is Merge.PREPEND:
        ordered = tagged_similar + tagged_recent
    else:
        ordered = [pair for both in zip(tagged_recent, tagged_similar, strict=False) for pair in both]
        shorter = min(len(recent), len(similar))
        ordered += tagged_recent[shorter:] + tagged_similar[shorter:]
    first: dict[int, tuple[str, Memory]] = {}
    for source, memory in ordered:
        first.setdefault(memory.id, (source, memory))
    return list(first.values())


def prompt_line(memory: Memory) -> str:
    """A memory as one prompt-ready line: ``[date time] (role, user) text``."""
    who = ", ".join(part for part in (memory.role, memory.user) if part)
    when = memory.created_at[:16].replace("T", " ")
    return f"[{when}]{f' ({who})' if who else ''} {' '.join(memory.text.split())}"


@opt.with_filters("user", "conversation", "role", "tag")
def context(
    query: Annotated[
        list[str] | None, typer.Argument(metavar="QUERY", help="What the conversation is about.")
    ] = None,
    recent: Annotated[int, typer.Option("--recent", min=0, metavar="N", help="The N newest memories.")] = 10,
    similar: Annotated[
        int, typer.Option("--similar", min=0, metavar="K", help="The K most similar to QUERY.")
    ] = 5,
    how: Annotated[
        Merge, typer.Option("--merge", help="append: recent then similar; prepend; interleave.")
    ] = (Merge.APPEND),
    min_score: Annotated[
        float | None, typer.Option("--min-score", metavar="COSINE", help="Similar ones need this raw cosine.")
    ] = None,
    filters: Filters = opt.NO_FILTERS,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Print the memories an assistant should see: the newest plus the most similar to QUERY,
    merged, each once — as prompt-ready lines or --json (with "source": recent or similar)."""
    text = read_text(query, stdin(), what="query") if similar else ""
    threshold = check_min_score(min_score)
    with open_store(store, create=False) as opened:
        if opened is None:
            raise typer.Exit(EXIT_NOTHING_FOUND)
        newest = opened.newest(filters, recent) if recent else []
        found = _similar(opened, text, similar, filters, threshold)
    merged = merge(newest, found, how)
    if not merged:
        raise typer.Exit(EXIT_NOTHING_FOUND)
    for source, memory in merged:
        line = render.json_line({**render.memory_record(memory), "source": source}) if json_out else None
        typer.echo(line or prompt_line(memory))


def _similar(
    store: MemoryStore, text: str, k: int, filters: Filters, threshold: float | None
) -> list[Memory]:
    if not k or store.model is None:
        return []
    outcome = search_once(store, text, k, filters, DEFAULT_SEARCH_MODE, threshold)
    return [hit.memory for hit in outcome.hits]


def show(
    memory_id: Annotated[int, typer.Argument(metavar="ID", help="The memory to show.")],
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Print one memory in full (all fields). Exit 1 if there is no such memory."""
    with open_store(store, create=False) as opened:
        found = {} if opened is None else opened.records.get_many([memory_id])
    if memory_id not in found:
        typer.echo(f"Error: there is no memory {memory_id}", err=True)
        raise typer.Exit(EXIT_NOTHING_FOUND)
    record = render.memory_record(found[memory_id])
    if json_out:
        typer.echo(render.json_line(record))
        return
    for key, value in record.items():
        shown = ", ".join(value) if key == "tags" else render.json_line(value) if key == "meta" else value
        typer.echo(f"{key + ':':<14}{'' if shown is None else shown}")


def stats(json_out: opt.JsonOption = False, store: opt.StoreOption = None) -> None:
    """Counts by user, conversation and tag; model, index, disk size, oldest and newest memory."""
    from remem.index.summary import summarize  # noqa: PLC0415

    with open_store(store, create=False) as opened:
        if opened is None:
            raise typer.Exit(EXIT_NOTHING_FOUND)
        summary = summarize(opened)
    if json_out:
        typer.echo(render.json_line(summary))
        return
    for key, value in summary.items():
        if isinstance(value, dict):
            typer.echo(f"{key}:")
            for name, count in value.items():
                typer.echo(f"  {name:<24} {count}")
        else:
            typer.echo(f"{key + ':':<16}{value}")
