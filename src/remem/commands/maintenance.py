"""Commands that keep a store healthy: reindex and doctor. Safe to run from cron."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from remem import render
from remem.commands import options as opt
from remem.commands.common import (
    EXIT_FAILURE,
    EXIT_NOTHING_FOUND,
    note,
    open_store,
    progress_bar,
    warn,
)
from remem.commands.modelsel import embedder_for, load_model, verify_in_use
from remem.errors import InvalidInputError
from remem.index import MemoryStore
from remem.index.kinds import HnswParams
from remem.index.settings import REQUESTED_KINDS

if TYPE_CHECKING:
    from remem.index.doctor import Check


def register(app: typer.Typer) -> None:
    """Add these commands to the app."""
    app.command()(reindex)
    app.command()(doctor)


def _hnsw(
    store: MemoryStore, m: int | None, ef_construction: int | None, ef_search: int | None
) -> HnswParams | None:
    if m is None and ef_construction is None and ef_search is None:
        return None
    current = store.settings.hnsw
    values = (m or current.m, ef_construction or current.ef_construction, ef_search or current.ef_search)
    if min(values) < 2:
        raise InvalidInputError("--hnsw-m, --ef-construction and --ef-search must be at least 2")
    return HnswParams(*values)


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
        int | None, typer.Option("--ef-search", metavar="N", help="HNSW search beam [64].")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", metavar="NAME", help="Re-embed every memory with this model.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even what is already current.")] = False,
    store: opt.StoreOption = None,
) -> None:
    """Rebuild the vector and keyword indexes from the database; switch index kind or model.

    Without --model nothing is re-embedded. With --model every memory is embedded again (resumable
    if interrupted; searches keep using the old vectors until the new ones are swapped in at once).
    Running it twice in a row does nothing the second time; with --force it re-embeds even with the
    store's own model (e.g. so every vector comes from the optimized variant).
    """
    if index is not None and index not in REQUESTED_KINDS:
        raise InvalidInputError(f"--index must be one of {', '.join(REQUESTED_KINDS)}, not {index!r}")
    from remem.index.maintenance import reindex as rebuild  # noqa: PLC0415 - heavy: numpy, FAISS

    with open_store(store, create=False) as opened:
        if opened is None:
            raise typer.Exit(EXIT_NOTHING_FOUND)
        if model is not None:
            _reembed(opened, model, force)
        report = rebuild(opened, index, _hnsw(opened, hnsw_m, ef_construction, ef_search), force)
    parts = [f"{report.vectors} vectors"]
    parts.append(
        f"{report.kind.value} index rebuilt"
        if report.rebuilt_index and report.kind
        else "vector index current"
    )
    parts.append("keyword index rebuilt" if report.rebuilt_keywords else "keyword index current")
    note(f"Reindexed: {', '.join(parts)} ({report.seconds:.1f} s).")


def _reembed(store: MemoryStore, name: str, force: bool) -> None:
    from remem.index.reembed import reembed  # noqa: PLC0415

    embedder, target = load_model(name, verify=True)
    with progress_bar(1, f"Embedding with {name}") as bar:

        def progress(done: int, total: int) -> None:
            if bar is not None:
                bar.length = total
                bar.update(done - bar.pos)

        report = reembed(
            store,
            target,
            lambda texts: embedder.embed_documents(texts).windows,
            progress=progress,
            force=force,
        )
    if report.swapped:
        resumed = f" (resumed after {report.resumed_from})" if report.resumed_from else ""
        note(f"Re-embedded {report.embedded} memories with {name}{resumed}.")
    else:
        note(f"The store already uses {name}; nothing to re-embed.")


def _model_check(store: MemoryStore) -> Check:
    from remem.index.doctor import Check  # noqa: PLC0415

    if store.model is None:
        return Check("model", True, "none recorded yet")
    try:
        embedder, _ = embedder_for(store)
        verify_in_use(embedder)
    except Exception as exc:  # any failure to find or verify the model is the finding
        return Check("model", False, str(exc))
    return Check("model", True, f"{embedder.spec.name} files verified (sha256)")


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
    from remem.index.doctor import examine, recover, repair  # noqa: PLC0415 - heavy: numpy, FAISS

    with open_store(store, create=False) as opened:
        if opened is None:
            raise typer.Exit(EXIT_NOTHING_FOUND)
        recover(opened)
        if repair_:
            for action in repair(opened):
                note(f"Repaired: {action}")
        checks = [*examine(opened), _model_check(opened)]
    for check in checks:
        if json_out:
            typer.echo(render.json_line({"check": check.name, "ok": check.ok, "detail": check.detail}))
        else:
            typer.echo(f"{'ok  ' if check.ok else 'FAIL'}  {check.name}: {check.detail}")
    failing = [c for c in checks if not c.ok]
    if failing:
        hint = " (--repair can fix some)" if any(c.repairable for c in failing) and not repair_ else ""
        warn(f"{len(failing)} problem{'s' if len(failing) > 1 else ''} found{hint}")
        raise typer.Exit(EXIT_FAILURE)
