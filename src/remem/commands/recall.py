"""Commands that look at memories: context (for LLM prompts), show, stats."""

from typing import Annotated

import typer

import remem
from remem import render
from remem.commands import options as opt
from remem.commands.common import EXIT_NOTHING_FOUND, note, open_memories, print_results, stdin
from remem.errors import MemoryNotFoundError
from remem.inputs import check_min_score, read_text

#: The fields ``show`` prints only when they are set (a memory that changed, or will expire).
_SHOWN_WHEN_SET = ("superseded_by", "superseded_at", "expires_at")


def register(app: typer.Typer) -> None:
    """Add these commands to the app."""
    app.command()(context)
    app.command(context_settings=opt.IDS_MAY_BE_NEGATIVE)(show)
    app.command()(stats)


@opt.with_filters(*opt.CONVERSATION)
def context(
    query: Annotated[
        list[str] | None, typer.Argument(metavar="QUERY", help="What the conversation is about.")
    ] = None,
    recent: Annotated[int, typer.Option("--recent", min=0, metavar="N", help="The N newest memories.")] = 10,
    similar: Annotated[
        int, typer.Option("--similar", min=0, metavar="K", help="The K most similar to QUERY.")
    ] = 5,
    how: Annotated[
        remem.Merge, typer.Option("--merge", help="append: recent then similar; prepend; interleave.")
    ] = (remem.Merge.APPEND),
    min_score: Annotated[
        float | None,
        typer.Option("--min-score", metavar="SCORE", help="Similar ones need this relevance (0..1)."),
    ] = None,
    filters: remem.Filters = opt.NO_FILTERS,
    no_dates: opt.NoDatesOption = False,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Print the memories an assistant should see: the newest plus the most similar to QUERY,
    merged, each once — as prompt-ready lines or --json (with "source": recent or similar).
    Time words in QUERY rank the similar ones from then higher, as in search (--no-dates: not)."""
    text = read_text(query, stdin(), what="query") if similar else None
    threshold = check_min_score(min_score)
    with open_memories(store, create=False) as memories:
        if memories is None:
            raise typer.Exit(EXIT_NOTHING_FOUND)
        items = memories.context(
            text,
            recent=recent,
            similar=similar,
            merge_as=how,
            min_score=threshold,
            where=filters,
            dates=not no_dates,
        )
    if not items:
        raise typer.Exit(EXIT_NOTHING_FOUND)
    for item in items:
        record = {**render.memory_record(item.memory), "source": item.source}
        typer.echo(render.json_line(record) if json_out else render.prompt_line(item.memory))


def show(
    memory_id: Annotated[int, typer.Argument(metavar="ID", help="The memory to show.")],
    history: Annotated[
        bool,
        typer.Option("--history", help="Its chain, oldest first: what it superseded and what superseded it."),
    ] = False,
    wide: opt.WideOption = False,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Print one memory in full (all fields), or with --history the memories that superseded one
    another up to it and after it. Exit 1 if there is no such memory."""
    with open_memories(store, create=False) as memories:
        if memories is None:
            raise MemoryNotFoundError([memory_id])
        chain = memories.history(memory_id) if history else [memories.get(memory_id)]
    if history:
        print_results(chain, json_out, render.memory_record, render.history_table, wide)
        return
    record = render.memory_record(chain[0])
    if json_out:
        typer.echo(render.json_line(record))
        return
    for key, value in record.items():
        if key in _SHOWN_WHEN_SET and value is None:
            continue
        shown = ", ".join(value) if key == "tags" else render.json_line(value) if key == "meta" else value
        if key == "expires_at" and chain[0].expired():
            shown = f"{value} (expired)"
        typer.echo(
            f"{key + ':':<15}{'' if shown is None else render.visible(str(shown), keep=chr(10) + chr(9))}"
        )


def stats(json_out: opt.JsonOption = False, store: opt.StoreOption = None) -> None:
    """Counts by user, conversation and tag; model, index, disk size, oldest and newest memory."""
    with open_memories(store, create=False) as memories:
        if memories is None:
            raise typer.Exit(EXIT_NOTHING_FOUND)
        summary, advice = memories.stats().record(), memories.index_advice()
    if json_out:
        typer.echo(render.json_line(summary))
    else:
        for key, value in summary.items():
            if isinstance(value, dict):
                typer.echo(f"{key}:")
                for name, count in value.items():
                    typer.echo(f"  {render.visible(name):<24} {count}")
            else:
                typer.echo(f"{key + ':':<16}{value}")
    if advice is not None:
        note(advice)
