"""Which model a command uses: the store's recorded model, a new store's choice, a user's own.

A new store takes, in order: the model in --model-dir / $REMEM_MODEL_DIR; bge-small-en-v1.5 when
it has been pulled; the bundled all-minilm-l6-v2. It says once on stderr which one it chose. After
that a store keeps its model: another one is refused (``MemoryStore.check_model``).
"""

from __future__ import annotations

import functools
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from remem.commands.common import note
from remem.config import resolve_models_dir
from remem.errors import EmbedderError, ModelMismatchError
from remem.index import MemoryStore, ModelStamp

if TYPE_CHECKING:
    from remem.embedders.cache import ModelCache
    from remem.embedders.runner import OnnxEmbedder
    from remem.embedders.spec import ModelFiles, ModelSpec

_chosen: dict[str, Path | None] = {"model_dir": None}


def set_model_dir(directory: Path | None) -> None:
    """The user's own model directory for this invocation (from --model-dir / $REMEM_MODEL_DIR)."""
    _chosen["model_dir"] = directory


def model_cache() -> ModelCache:
    """The cache of pulled models ($REMEM_MODELS, else the user cache directory)."""
    from remem.embedders.cache import ModelCache  # noqa: PLC0415

    return ModelCache(resolve_models_dir(os.environ))


def custom_model() -> tuple[ModelSpec, ModelFiles] | None:
    """The user's own model from --model-dir / $REMEM_MODEL_DIR, or None when none was given."""
    directory = _chosen["model_dir"]
    return None if directory is None else _load_model_dir(directory)


@functools.lru_cache(maxsize=2)
def _load_model_dir(directory: Path) -> tuple[ModelSpec, ModelFiles]:
    """Described (and its files hashed) once per process."""
    from remem.embedders.custom import load_model_dir  # noqa: PLC0415

    return load_model_dir(directory)


def resolve_model(name: str) -> tuple[ModelSpec, ModelFiles]:
    """A model by name: the user's own from --model-dir, else a built-in one (installed)."""
    from remem.embedders.registry import get_spec  # noqa: PLC0415

    custom = custom_model()
    if custom is not None and custom[0].name == name:
        return custom
    spec = get_spec(name)
    return spec, _prefer_variant(spec, model_cache().locate(spec))


def _prefer_variant(spec: ModelSpec, files: ModelFiles) -> ModelFiles:
    """The optimised variant of the model file when ``remem model optimize`` made one."""
    from remem.embedders.variants import find_variant  # noqa: PLC0415

    variant = find_variant(model_cache(), spec)
    return files if variant is None else replace(files, model=variant)


def _new_store_model() -> tuple[ModelSpec, ModelFiles]:
    from remem.embedders.registry import BUNDLED_MODEL, PREFERRED_MODEL  # noqa: PLC0415

    custom = custom_model()
    if custom is not None:
        note(f"New store: using your model {custom[0].name} from {custom[1].model.parent}.")
        return custom
    cache = model_cache()
    chosen = PREFERRED_MODEL if cache.is_installed(PREFERRED_MODEL) else BUNDLED_MODEL
    if chosen is PREFERRED_MODEL:
        note(f"New store: using {chosen.name} ({chosen.dim}-d); the store keeps this model.")
    else:
        note(
            f"New store: using the bundled {chosen.name}. For better search, stop and run "
            f"`remem model pull {PREFERRED_MODEL.name}` ({PREFERRED_MODEL.size / 1e6:.0f} MB, once) "
            f"before the first add, or switch later with `remem reindex --model {PREFERRED_MODEL.name}`."
        )
    return chosen, _prefer_variant(chosen, cache.locate(chosen))


def load_model(name: str | None, *, verify: bool) -> tuple[OnnxEmbedder, ModelStamp]:
    """The embedder of a model by name (a new store's choice when ``name`` is None) and its stamp.

    With ``verify`` the files are hashed against the pinned sha256 (the first time a store uses
    them); otherwise the pinned value is trusted. An optimised variant is checked by its own record.
    """
    from remem.embedders.registry import is_builtin  # noqa: PLC0415
    from remem.embedders.runner import OnnxEmbedder  # noqa: PLC0415
    from remem.embedders.spec import verify_model_files  # noqa: PLC0415

    spec, files = _new_store_model() if name is None else resolve_model(name)
    if verify and is_builtin(spec):  # a user's own model was hashed just now to describe it
        verify_model_files(spec, model_cache().files(spec))
    return OnnxEmbedder(spec, files), ModelStamp(spec.name, spec.dim, spec.pooling.value, spec.model_sha256)


def verify_in_use(embedder: OnnxEmbedder) -> None:
    """Re-hash the files an embedder runs: a built-in model's originals against their pinned sha256
    and its optimized variant against its record; EmbedderError naming a damaged file."""
    from remem.embedders.registry import is_builtin  # noqa: PLC0415
    from remem.embedders.spec import verify_model_files  # noqa: PLC0415
    from remem.embedders.variants import verify_variant  # noqa: PLC0415

    spec = embedder.spec
    if not is_builtin(spec):
        verify_model_files(spec, embedder.files)
        return
    cache = model_cache()
    originals = cache.files(spec)
    verify_model_files(spec, originals)
    if embedder.files.model != originals.model and (problem := verify_variant(cache, spec)):
        raise EmbedderError(f"the optimized variant is damaged: {problem}; run `remem model optimize`")


def embedder_for(store: MemoryStore) -> tuple[OnnxEmbedder, ModelStamp]:
    """The embedder for this store's model (a new store chooses one), checked against the store."""
    from remem.embedders.registry import known_models  # noqa: PLC0415

    recorded = store.model
    custom = custom_model()
    builtin = [spec.name for spec in known_models()]
    if recorded is not None and custom is None and recorded.name not in builtin:
        raise ModelMismatchError(
            f"the store at {store.directory} holds vectors of model {recorded.name} ({recorded.dim}-d), "
            f"which this remem cannot run (built in: {', '.join(builtin)}); if it is your own model, "
            "pass --model-dir DIR (or set REMEM_MODEL_DIR) before the command"
        )
    # An own model given for a store of another model is refused by check_model, like any other.
    name = None if recorded is None else (custom[0].name if custom is not None else recorded.name)
    embedder, stamp = load_model(name, verify=recorded is None)
    store.check_model(stamp)
    return embedder, stamp
