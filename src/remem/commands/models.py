"""`remem model …`: list, pull, verify, path and optimize embedding models.

Only `remem model pull` touches the network; nothing else in remem ever does.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from remem import __version__, render
from remem.commands import options as opt
from remem.commands.common import (
    EXIT_FAILURE,
    EXIT_NOTHING_FOUND,
    note,
    open_store,
    print_results,
    progress_bar,
)
from remem.commands.modelsel import custom_model, model_cache
from remem.config import resolve_endpoint

if TYPE_CHECKING:
    from remem.embedders.cache import ModelCache
    from remem.embedders.spec import ModelSpec

model_app = typer.Typer(
    name="model",
    help="Embedding models: list, pull (the only network use), verify, path, optimize.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="A model name from `remem model list`.")]


def register(app: typer.Typer) -> None:
    """Add the `model` command group to the app."""
    app.add_typer(model_app)


def _spec(name: str) -> ModelSpec:
    from remem.embedders.registry import get_spec  # noqa: PLC0415

    return get_spec(name)


def _state(cache: ModelCache, spec: ModelSpec) -> str:
    from remem.embedders.variants import find_variant  # noqa: PLC0415

    if not spec.downloadable:
        state = "bundled"
    elif cache.is_installed(spec):
        state = "installed"
    else:
        return "not installed"
    return f"{state}, optimized" if find_variant(cache, spec) is not None else state


def _model_rows(store_model: str | None) -> list[dict[str, Any]]:
    from remem.embedders.registry import known_models  # noqa: PLC0415

    cache = model_cache()
    described = [(spec, _state(cache, spec)) for spec in known_models()]
    custom = custom_model()
    if custom is not None:
        described.append((custom[0], "your own"))
    return [
        {
            "name": spec.name,
            "dim": spec.dim,
            "pooling": spec.pooling.value,
            "max_tokens": spec.max_tokens,
            "size_bytes": spec.size,
            "state": state,
            "store": spec.name == store_model,
            "license": spec.license,
            "source": spec.source,
        }
        for spec, state in described
    ]


def _table(rows: Any, width: int | None) -> str:
    cells = [
        [
            "*" if row["store"] else "",
            row["name"],
            str(row["dim"]),
            row["pooling"],
            str(row["max_tokens"]),
            f"{row['size_bytes'] / 1e6:.0f} MB",
            row["state"],
        ]
        for row in rows
    ]
    return render.table(["", "NAME", "DIM", "POOLING", "WINDOW", "SIZE", "STATE"], cells, width)


@model_app.command("list")
def list_models(json_out: opt.JsonOption = False, store: opt.StoreOption = None) -> None:
    """Every model remem knows: dimensions, pooling, window, size, whether installed.

    A * marks the model the store uses.
    """
    with open_store(store, create=False) as opened:
        recorded = None if opened is None or opened.model is None else opened.model.name
    print_results(_model_rows(recorded), json_out, lambda row: row, _table)


@model_app.command()
def pull(name: NameArgument) -> None:
    """Download a model's files once, verify their sha256, install them (resumes if cut off).

    Downloads from $REMEM_HF_ENDPOINT when set (a mirror), else huggingface.co, at a pinned revision.
    """
    import urllib.request  # noqa: PLC0415 - only `pull` uses the network

    spec = _spec(name)
    cache = model_cache()
    with progress_bar(spec.size, f"Pulling {name}") as bar:
        files = cache.pull(
            spec,
            resolve_endpoint(os.environ),
            f"remem/{__version__}",
            None if bar is None else bar.update,
            urllib.request.getproxies(),  # the usual *_proxy variables, read here at the edge
        )
    note(f"Installed {name} ({spec.size / 1e6:.0f} MB, sha256 verified).")
    typer.echo(str(files.model.parent))


@model_app.command()
def verify(
    name: Annotated[str | None, typer.Argument(metavar="[NAME]", help="Default: all.")] = None,
) -> None:
    """Re-hash installed model files (and optimized variants) against their pinned sha256.

    Exit 0 when all are intact, 2 when any is damaged (`remem model pull NAME` replaces it).
    """
    from remem.embedders.registry import known_models  # noqa: PLC0415
    from remem.embedders.variants import verify_variant  # noqa: PLC0415

    cache = model_cache()
    specs = known_models() if name is None else (_spec(name),)
    damaged = 0
    for spec in specs:
        checks = cache.verify(spec)
        if not checks:
            typer.echo(f"--    {spec.name}: not installed")
        for check in checks:
            detail = check.path if check.problem is None else f"{check.path}: {check.problem}"
            typer.echo(f"{'ok  ' if check.problem is None else 'FAIL'}  {spec.name}: {detail}")
        problem = verify_variant(cache, spec)
        if problem is not None:
            typer.echo(f"FAIL  {spec.name} (optimized): {problem}")
        damaged += sum(check.problem is not None for check in checks) + (problem is not None)
    if damaged:
        raise typer.Exit(EXIT_FAILURE)


@model_app.command()
def path(name: NameArgument) -> None:
    """Print the path of a model's ONNX file (exit 1 when it is not installed)."""
    spec = _spec(name)
    cache = model_cache()
    if not cache.is_installed(spec):
        note(f"{name} is not installed; `remem model pull {name}` installs it.")
        raise typer.Exit(EXIT_NOTHING_FOUND)
    typer.echo(str(cache.files(spec).model))


@model_app.command()
def optimize(
    name: Annotated[
        str, typer.Argument(metavar="[NAME]", help="Default: the bundled model.")
    ] = "all-minilm-l6-v2",
    undo: Annotated[bool, typer.Option("--undo", help="Remove the optimized variant.")] = False,
) -> None:
    """Make a faster int8 per-channel variant of a model, once; kept only if it agrees ≥ 0.99.

    The original stays installed; stores keep their model (the variant computes the same vectors).
    """
    from remem.embedders import variants  # noqa: PLC0415

    spec = _spec(name)
    cache = model_cache()
    if undo:
        removed = variants.remove_variant(cache, spec)
        note(f"Removed the optimized {name}." if removed else f"{name} has no optimized variant.")
        return
    import onnxruntime  # noqa: PLC0415

    record = variants.make_variant(cache, spec, cache.locate(spec), f"onnxruntime {onnxruntime.__version__}")
    note(f"Optimized {name}: agreement {record.agreement:.4f} (mean cosine) with the original; now in use.")
    typer.echo(str(cache.directory(spec) / variants.VARIANT_FILE))
