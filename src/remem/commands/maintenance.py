"""Commands that keep a store healthy: reindex, compact and doctor. Safe to run from cron."""

import time
from typing import Annotated, Any

import typer

import remem
from remem import render
from remem.commands import options as opt
from remem.commands.common import EXIT_FAILURE, EXIT_NOTHING_FOUND, note, open_memories, progress_bar, warn


def register(app: typer.Typer) -> None:
    """Add these commands to the app."""
    app.command()(reindex)
    app.command()(compact)
    app.command()(doctor)


def reindex(
    index: Annotated[
        str | None,
        typer.Option("--index", metavar="KIND", help="exact, hnsw, or auto (HNSW from 50,000 vectors up)."),
    ] = None,
    hnsw_m: Annotated[
        int | None, typer.Option("--hnsw-m", metavar="M", help="HNSW graph degree [32].")
    ] = None,
    ef_construction: Annotated[
        int | None, typer.Option("--ef-construction", metavar="N", help="HNSW build beam [200].")
    ] = None,
    ef_search: Annotated[
        int | None, typer.Option("--ef-search", metavar="N", help="HNSW search beam [512].")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", metavar="NAME", help="Re-embed every memory with this model.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even what is already current.")] = False,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Rebuild the vector and keyword indexes from the database; switch index kind or model.

    Without --model nothing is re-embedded. With --model every memory is embedded again (resumable
    if interrupted; searches keep using the old vectors until the new ones are swapped in at once).
    Running it twice in a row does nothing the second time; with --force it re-embeds even with the
    store's own model (e.g. a store made by an earlier remem, onto the file remem ships).
    """
    with open_memories(store, create=False) as memories:
        if memories is None:
            raise typer.Exit(EXIT_NOTHING_FOUND)
        with progress_bar(1, f"Embedding with {model}") as progress:
            outcome = memories.reindex(
                index=index,
                hnsw=(hnsw_m, ef_construction, ef_search),
                model=model,
                force=force,
                progress=progress,
            )
    if json_out:
        typer.echo(render.json_line(_reindex_record(outcome, model)))
    _say_reindexed(outcome, model)


def _reindex_record(outcome: remem.ReindexOutcome, model: str | None) -> dict[str, Any]:
    """``reindex --json``'s one object (docs/output.md)."""
    report, embedded = outcome.rebuilt, outcome.reembedded
    return {
        "vectors": report.vectors,
        "index": report.kind,
        "rebuilt_index": report.rebuilt_index,
        "rebuilt_keywords": report.rebuilt_keywords,
        "embedded_pending": outcome.embedded_pending,
        "model": model,
        "reembedded": None if embedded is None else embedded.embedded if embedded.swapped else 0,
        "resumed_from": None if embedded is None else embedded.resumed_from,
        "seconds": round(outcome.seconds, 3),
    }


def _say_reindexed(outcome: remem.ReindexOutcome, model: str | None) -> None:
    """What a reindex did, on stderr: the whole run's seconds (the model's loading and the
    re-embedding included)."""
    if outcome.embedded_pending:
        note(f"Embedded {outcome.embedded_pending} memories that were waiting for their vectors.")
    embedded = outcome.reembedded
    if embedded is not None and embedded.swapped:
        resumed = f" (resumed after {embedded.resumed_from})" if embedded.resumed_from else ""
        note(f"Re-embedded {embedded.embedded} memories with {model}{resumed}.")
    elif embedded is not None:
        note(f"The store already uses {model}; nothing to re-embed.")
    report = outcome.rebuilt
    parts = [f"{report.vectors} vectors"]
    parts.append(
        f"{report.kind} index rebuilt" if report.rebuilt_index and report.kind else "vector index current"
    )
    parts.append("keyword index rebuilt" if report.rebuilt_keywords else "keyword index current")
    note(f"Reindexed: {', '.join(parts)} ({outcome.seconds:.1f} s).")


def compact(json_out: opt.JsonOption = False, store: opt.StoreOption = None) -> None:
    """Write the vector index file level with the database if writes since made it lag.

    Writes add to the database only; searches catch the index file up from what changed, and it is
    rewritten once 10,000 vectors (HNSW: 2,000) were added or forgotten since. In a store of 20,000
    memories or more it also takes the keyword search's stored heads again when 5,000 memories were
    added, or 500 edited, since. Run from cron to do that at a quiet time: it exits 0 at once
    when there is nothing to do (PostgreSQL: never anything).
    """
    started = time.perf_counter()
    with open_memories(store, create=False) as memories:
        if memories is None:
            raise typer.Exit(EXIT_NOTHING_FOUND)
        done = memories.compact()
    seconds = time.perf_counter() - started
    if json_out:
        record = {
            "compacted": done.vectors,
            "keyword_heads": done.keyword_heads,
            "seconds": round(seconds, 3),
        }
        typer.echo(render.json_line(record))
    elif done:
        parts = [f"{done.vectors} vectors written into the index file"] if done.vectors else []
        parts += (
            [f"the keyword heads of {done.keyword_heads} words taken again"] if done.keyword_heads else []
        )
        note(f"Compacted: {'; '.join(parts)} ({seconds:.1f} s).")
    else:
        note("Nothing to compact.")


def doctor(
    repair_: Annotated[
        bool, typer.Option("--repair", help="Fix what can be fixed (rebuild derived files…).")
    ] = False,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Check the store: database, keyword index, vectors, index file, model files, permissions.

    Exit 0 when everything is fine (after --repair: when nothing is left to fix), 2 otherwise.
    """
    with open_memories(store, create=False) as memories:
        if memories is None:
            raise typer.Exit(EXIT_FAILURE)
        report = memories.doctor(repair=repair_)
    for action in report.repaired:
        note(f"Repaired: {action}")
    for check in report.checks:
        if json_out:
            typer.echo(render.json_line({"check": check.name, "ok": check.ok, "detail": check.detail}))
        else:
            typer.echo(f"{'ok  ' if check.ok else 'FAIL'}  {check.name}: {check.detail}")
    for advice in report.advice:
        note(advice)
    failing = [c for c in report.checks if not c.ok]
    if failing:
        hint = " (--repair can fix some)" if any(c.repairable for c in failing) and not repair_ else ""
        warn(f"{len(failing)} problem{'s' if len(failing) > 1 else ''} found{hint}")
        raise typer.Exit(EXIT_FAILURE)
