"""``remem.open``: the one place that resolves remem's documented defaults from the environment."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import remem.checks as checks  # noqa: PLR0402 - the layer rule reads `from remem import` as the public API
from remem.config import (
    resolve_endpoint,
    resolve_model,
    resolve_model_dir,
    resolve_models_dir,
    resolve_store,
)
from remem.core.memories import Memories
from remem.embedders.catalog import ModelCatalog
from remem.errors import InvalidInputError

if TYPE_CHECKING:
    from remem.backends.base import Backend
    from remem.embedders.base import Embedder


def model_catalog(
    *,
    models_dir: str | Path | None = None,
    model_dir: str | Path | None = None,
    model: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ModelCatalog:
    """The models this installation can run: pulled ones in ``models_dir`` (default
    ``$REMEM_MODELS``, else the user cache directory) and a user's own in ``model_dir`` (default
    ``$REMEM_MODEL_DIR``, else none); a new store starts with ``model`` (default ``$REMEM_MODEL``, else
    the usual choice: ``ModelCatalog``); ``pull`` downloads from ``$REMEM_HF_ENDPOINT`` (a mirror),
    else huggingface.co. ``environ`` replaces ``os.environ`` for the defaults. A wrong type is a
    TypeError naming the argument."""
    checks.optional_path(models_dir, "models_dir"), checks.optional_path(model_dir, "model_dir")
    if environ is not None and not isinstance(environ, Mapping):
        raise checks.wrong("environ", "a mapping or None", environ)
    env = os.environ if environ is None else environ
    models: Path | Callable[[], Path] = functools.partial(resolve_models_dir, env)  # found when first used
    if models_dir is not None:
        models = Path(models_dir).expanduser().absolute()
    own = resolve_model_dir(None if model_dir is None else Path(model_dir), env)
    if model is not None and not isinstance(model, str):
        raise checks.wrong("model", "a model name or None", model)
    return ModelCatalog(models, own, resolve_endpoint(env), new_store_model=resolve_model(model, env))


def open(
    store: str | Path | None = None,
    *,
    create: bool = True,
    model_dir: str | Path | None = None,
    models_dir: str | Path | None = None,
    model: str | None = None,
    embedder: Embedder | None = None,
    environ: Mapping[str, str] | None = None,
) -> Memories:
    """Open (with ``create``, make) the store in directory ``store`` — or, for a
    ``postgresql://user@host/db[?schema=NAME]`` URL, on that server — and return its ``Memories``.

    ``store`` defaults to ``$REMEM_HOME``, else the user data directory; ``model_dir``,
    ``models_dir`` and ``model`` (the model a new store starts with) as in ``model_catalog``.
    ``embedder`` replaces the model choice (for tests, or a model of your own in Python); the store
    still refuses vectors of a model it does not hold.
    Raises StoreNotFoundError when there is no store and ``create`` is false, StoreError when the
    directory is unusable or the server unreachable, StoreCorruptError when its database is damaged.
    A wrong type is a TypeError naming the argument; an empty ``store`` an InvalidInputError.
    """
    if isinstance(store, str) and not store.strip():
        raise InvalidInputError("store must not be empty (a directory or a postgresql:// URL)")
    checks.optional_path(store, "store"), checks.flag(create, "create")
    if embedder is not None:
        from remem.embedders.base import Embedder  # noqa: PLC0415 - loads no numpy

        if not isinstance(embedder, Embedder):
            raise checks.wrong("embedder", "an Embedder (info, embed_documents, embed_queries)", embedder)
    catalog = model_catalog(models_dir=models_dir, model_dir=model_dir, model=model, environ=environ)
    env = os.environ if environ is None else environ
    return Memories(_backend(resolve_store(store, env), create), catalog, embedder)


def _backend(place: str | Path, create: bool) -> Backend:
    """The back-end for a resolved store: PostgreSQL for a URL, else the local directory."""
    if isinstance(place, str):
        from remem.backends.postgres.store import PostgresBackend  # noqa: PLC0415 - the optional extra

        return PostgresBackend.open(place, create=create)
    from remem.backends.local import LocalBackend  # noqa: PLC0415

    return LocalBackend.open(place, create=create)
