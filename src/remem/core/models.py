"""Which models remem can run and which one a store uses: the catalog of built-in models (bundled or
pulled), a user's own model directory, the optimised variants, and the checks that keep a store on
its model.

A new store takes, in order: the user's own model (``model_dir``); bge-small-en-v1.5 when it has
been pulled; the bundled all-minilm-l6-v2 — and says so in a note. A built-in model runs as its
int8 variant (built once per machine on first use, verified, cached beside the model; its identity
— the same wherever it is built — is the store's model stamp) — as the calibrated variant made from
it when remem ships activation ranges for it (``embedders/calibrated.py``: batches of one length) —,
or as its original file when no variant can be built (the note says why). After that a store keeps
its model and file (a store made with the plain variant keeps it): another one is refused
(``Backend.check_model``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from remem.config import DEFAULT_ENDPOINT
from remem.core import fast
from remem.errors import EmbedderError, ModelMismatchError

if TYPE_CHECKING:
    from remem.embedders.base import Embedder
    from remem.embedders.cache import ModelCache
    from remem.embedders.runner import OnnxEmbedder
    from remem.embedders.spec import ModelFiles, ModelSpec
    from remem.types import ModelInfo


@dataclass(frozen=True)
class FileProblem:
    """One installed file that ``verify`` re-hashed: ``problem`` is None when it is intact."""

    model: str
    path: str
    problem: str | None


@functools.lru_cache(maxsize=2)
def _own_model(directory: Path) -> tuple[ModelSpec, ModelFiles]:
    """A user's own model, described (and its files hashed) once per process."""
    from remem.embedders.custom import load_model_dir  # noqa: PLC0415

    return load_model_dir(directory)


class ModelCatalog:
    """The models of one installation: ``models_dir`` (pulled models), ``model_dir`` (a user's own)."""

    def __init__(
        self,
        models_dir: Path | Callable[[], Path],
        model_dir: Path | None = None,
        endpoint: str = DEFAULT_ENDPOINT,
    ) -> None:
        """Look for pulled models in ``models_dir`` (or in what a function gives when models are
        first looked up) and for a user's own model in ``model_dir``; ``pull`` from the Hugging
        Face ``endpoint`` (or a mirror of it)."""
        self._models_dir = models_dir
        self.model_dir = model_dir
        self.endpoint = endpoint

    @property
    def models_dir(self) -> Path:
        """Where pulled models live."""
        if callable(self._models_dir):
            self._models_dir = self._models_dir()
        return self._models_dir

    @property
    def cache(self) -> ModelCache:
        """Where pulled models (and optimised variants) live."""
        from remem.embedders.cache import ModelCache  # noqa: PLC0415

        return ModelCache(self.models_dir)

    def own_model(self) -> tuple[ModelSpec, ModelFiles] | None:
        """The user's own model, or None when no ``model_dir`` was given."""
        return None if self.model_dir is None else _own_model(self.model_dir)

    def spec(self, name: str) -> ModelSpec:
        """A built-in model's description; EmbedderError if remem does not know the name."""
        from remem.embedders.registry import get_spec  # noqa: PLC0415

        return get_spec(name)

    def load(self, name: str, *, verify: bool) -> OnnxEmbedder:
        """The embedder a new store gets for a model by name: the user's own model when its name
        matches; else the built-in model's int8 variant (built on first use), or its original file
        when no variant can be built. With ``verify`` a built-in model's files are hashed first."""
        own = self.own_model()
        if own is not None and own[0].name == name:
            return self._embedder(*own, verify=verify)
        return self._fastest(self.spec(name), verify=verify)[0]

    def _embedder(self, spec: ModelSpec, files: ModelFiles, *, verify: bool) -> OnnxEmbedder:
        from remem.embedders.registry import is_builtin  # noqa: PLC0415
        from remem.embedders.runner import OnnxEmbedder  # noqa: PLC0415
        from remem.embedders.spec import verify_model_files  # noqa: PLC0415

        if verify and is_builtin(spec):
            verify_model_files(spec, self.cache.files(spec))
        return OnnxEmbedder(spec, files)

    def _fastest(self, spec: ModelSpec, *, verify: bool) -> tuple[OnnxEmbedder, str]:
        """A built-in model's embedder on its int8 variant (built once per machine on first use,
        recorded by its identity), else on the original file; and a sentence saying which and why."""
        original = self._embedder(spec, self.cache.locate(spec), verify=verify)
        found = self._variant(spec, original, verify=verify)
        if isinstance(found, str):
            return original, fast.fallback_note(spec.name, found)
        embedder, agreement, built = found
        return embedder, fast.variant_note(spec.name, agreement, built=built)

    def _variant(
        self, spec: ModelSpec, original: OnnxEmbedder, *, verify: bool, stamp: str | None = None
    ) -> tuple[OnnxEmbedder, float, bool] | str:
        """The embedder of the model's int8 variant — calibrated when remem can make it so, unless
        ``stamp`` (a store's) is the plain variant's —, its agreement and whether it was built just
        now; or why there is none. A store's own variant (``stamp`` given) is used even when new
        stores are switched off it (``remem model optimize --undo``)."""
        from remem.embedders import calibrated, variants  # noqa: PLC0415

        try:
            path, record, built = variants.ensure_variant(
                self.cache, spec, original.files, fast.runtime, even_if_off=stamp is not None
            )
        except EmbedderError as exc:
            return str(exc)
        if verify and not built and (problem := self._damaged(spec)):
            return problem  # (one built just now was hashed as it was installed)
        if stamp != record.stamp:  # a new store, or one made with the calibrated variant
            found = calibrated.ensure_calibrated(self.cache, spec, original.files, (path, record))
            if isinstance(found, str) and stamp is not None:
                return found  # that store's file cannot be made here: say why
            if not isinstance(found, str):
                files = replace(original.files, model=found[0])
                embedder = calibrated.calibrated_embedder(
                    spec,
                    files,
                    file_sha256=found[1].sha256,
                    sha256=found[1].identity,
                    graph_dir=found[0].parent,
                )
                return embedder, found[1].agreement, built  # its build is not announced apart
        files = replace(original.files, model=path)
        embedder = variants.variant_embedder(
            spec, files, sha256=record.stamp, file_sha256=record.sha256, graph_dir=path.parent
        )
        return embedder, record.agreement, built

    def _damaged(self, spec: ModelSpec, *, graphs: bool = False) -> str | None:
        """What is wrong with the model's variants (and their cached graphs), or None (``cache_problem``)."""
        from remem.embedders.calibrated import cache_problem  # noqa: PLC0415

        return cache_problem(self.cache, spec, graphs=graphs)

    def for_store(self, recorded: ModelInfo | None, location: str) -> tuple[OnnxEmbedder, str | None]:
        """The embedder for a store's recorded model (a new store's choice when None) and a note
        when a choice was made. A store keeps the file its vectors came from: the original when
        its stamp is the original's, else the int8 variant, which must be the very same file. The
        caller checks the embedder against the store (``check_model``)."""
        from remem.embedders.registry import known_models  # noqa: PLC0415

        if recorded is None:
            return self._new_store_embedder()
        own = self.own_model()
        builtin = [spec.name for spec in known_models()]
        if own is None and recorded.name not in builtin:
            raise ModelMismatchError(
                f"the store at {location} holds vectors of model {recorded.name} ({recorded.dim}-d), "
                f"which this remem cannot run (built in: {', '.join(builtin)}); if it is your own model, "
                "pass --model-dir DIR (or set REMEM_MODEL_DIR) before the command"
            )
        if own is not None:  # given for a store of another model, it is refused by check_model
            return self._embedder(*own, verify=False), None
        spec = self.spec(recorded.name)
        original = self._embedder(spec, self.cache.locate(spec), verify=False)
        if recorded.sha256 == spec.model_sha256:
            return original, None
        found = self._variant(spec, original, verify=False, stamp=recorded.sha256)
        if isinstance(found, str):
            raise ModelMismatchError(fast.unknown_file(location, recorded, None, found))
        embedder = found[0]
        if embedder.info.sha256 != recorded.sha256:
            raise ModelMismatchError(fast.unknown_file(location, recorded, embedder.info.sha256))
        return embedder, None

    def _new_store_embedder(self) -> tuple[OnnxEmbedder, str]:
        """The model a new store takes, its embedder, and the note that says which and why."""
        from remem.embedders.registry import BUNDLED_MODEL, PREFERRED_MODEL  # noqa: PLC0415

        own = self.own_model()
        if own is not None:
            note = f"New store: using your model {own[0].name} from {own[1].model.parent}."
            return self._embedder(*own, verify=True), note
        if self.cache.is_installed(PREFERRED_MODEL):
            chosen = PREFERRED_MODEL
            note = f"New store: using {chosen.name} ({chosen.dim}-d); the store keeps this model."
        else:
            chosen = BUNDLED_MODEL
            note = (
                f"New store: using the bundled {chosen.name}. For better search, stop and run "
                f"`remem model pull {PREFERRED_MODEL.name}` ({PREFERRED_MODEL.size / 1e6:.0f} MB, once) "
                f"before the first add, or switch later with `remem reindex --model {PREFERRED_MODEL.name}`."
            )
        embedder, which = self._fastest(chosen, verify=True)
        return embedder, f"{note} {which}"

    def verify_in_use(self, embedder: Embedder) -> str:
        """Re-hash the files an ONNX embedder runs (a built-in model's originals against their pinned
        sha256, its optimised variant against its record); returns what was checked, raises
        EmbedderError naming a damaged file. Other embedders are not checked."""
        from remem.embedders.registry import is_builtin  # noqa: PLC0415
        from remem.embedders.runner import OnnxEmbedder  # noqa: PLC0415
        from remem.embedders.spec import verify_model_files  # noqa: PLC0415

        if not isinstance(embedder, OnnxEmbedder):
            return f"{embedder.info.name} (supplied by the caller; not verified)"
        spec = embedder.spec
        if not is_builtin(spec):
            verify_model_files(spec, embedder.files)
        else:
            originals = self.cache.files(spec)
            verify_model_files(spec, originals)
            if embedder.files.model != originals.model and (problem := self._damaged(spec, graphs=True)):
                raise EmbedderError(f"the optimized variant is damaged: {problem}")
        return f"{spec.name} files verified (sha256)"

    def describe(self, store_model: str | None = None) -> list[dict[str, Any]]:
        """Every model known here as JSON-ready rows: name, dim, pooling, max_tokens, size_bytes,
        state (bundled / installed / not installed, optimized; your own), whether ``store_model``."""
        from remem.embedders.registry import known_models  # noqa: PLC0415

        described = [(spec, self._state(spec)) for spec in known_models()]
        own = self.own_model()
        if own is not None:
            described.append((own[0], "your own"))
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
                "languages": list(spec.languages),
            }
            for spec, state in described
        ]

    def describe_one(self, name: str) -> dict[str, Any]:
        """The row of one built-in model (see ``describe``); EmbedderError for an unknown name."""
        spec = self.spec(name)
        return next(row for row in self.describe() if row["name"] == spec.name)

    def _state(self, spec: ModelSpec) -> str:
        from remem.embedders.variants import find_variant  # noqa: PLC0415

        if not spec.downloadable:
            state = "bundled"
        elif self.cache.is_installed(spec):
            state = "installed"
        else:
            return "not installed"
        return f"{state}, optimized" if find_variant(self.cache, spec) is not None else state

    def pull(
        self,
        name: str,
        user_agent: str,
        progress: Callable[[int], Any] | None = None,
        proxies: Mapping[str, str] | None = None,
    ) -> Path:
        """Download a built-in model's files once from the catalog's endpoint, verify their sha256,
        install them (resuming a cut-off download); returns the model's directory. ``progress``
        gets the bytes of each chunk; ``proxies`` as urllib's ``getproxies()``."""
        files = self.cache.pull(self.spec(name), self.endpoint, user_agent, progress, proxies)
        return files.model.parent

    def verify(self, name: str | None = None) -> list[FileProblem]:
        """Re-hash every installed file (and optimised variant) of one model or all; a model that
        is not installed gives one row with path "" and problem None."""
        from remem.embedders.registry import known_models  # noqa: PLC0415

        rows = []
        for spec in known_models() if name is None else (self.spec(name),):
            checks = self.cache.verify(spec)
            if not checks:
                rows.append(FileProblem(spec.name, "", None))
            rows += [FileProblem(spec.name, str(c.path), c.problem) for c in checks]
            problem = self._damaged(spec, graphs=True)
            if problem is not None:
                rows.append(FileProblem(f"{spec.name} (optimized)", "", problem))
        return rows

    def path(self, name: str) -> Path | None:
        """The ONNX file of an installed model, or None when it is not installed."""
        spec = self.spec(name)
        return self.cache.files(spec).model if self.cache.is_installed(spec) else None

    def optimize(self, name: str) -> tuple[Path, float]:
        """Build, verify and install a model's int8 variant anew (switching it back on for new
        stores); its path and its agreement (mean cosine) with the original. EmbedderError, nothing
        kept, when it agrees too little."""
        from remem.embedders import variants  # noqa: PLC0415

        spec = self.spec(name)
        record = variants.make_variant(self.cache, spec, self.cache.locate(spec), fast.runtime)
        return self.cache.directory(spec) / variants.VARIANT_FILE, record.agreement

    def remove_optimized(self, name: str) -> bool:
        """Delete a model's optimised variant and keep new stores on the original file until
        ``optimize``; True when there was a variant."""
        from remem.embedders import variants  # noqa: PLC0415

        spec = self.spec(name)
        had = variants.installed_variant(self.cache, spec) is not None
        variants.switch_off(self.cache, spec, "switched off by `remem model optimize --undo`")
        return had
