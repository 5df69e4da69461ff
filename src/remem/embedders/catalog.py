"""Which models remem can run and which one a store uses.

The catalog of one installation: the built-in models (the bundled all-minilm-l6-v2, shipped inside
remem, the BGE models and multilingual-e5-small after ``remem model pull``), a user's own model
directory, and the choice of a store's model. A new store takes, in order: the user's own model
(``model_dir``); the model named for new stores (``new_store_model``, installed); bge-small-en-v1.5
when it has been pulled; the bundled all-minilm-l6-v2 — and says so in a note
(with the bundled model, a ``Tip``: how to get the better one).
Every model runs as its pinned file, verified by sha256 before onnxruntime sees a byte of it
(``sessions.load_session``); nothing is built or written on the user's machine. A store keeps its
model: the embedder given for a store is that of the file its vectors came from, or
ModelMismatchError saying what to run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from remem.config import DEFAULT_ENDPOINT
from remem.embedders import registry
from remem.embedders.cache import ModelCache
from remem.embedders.custom import load_model_dir
from remem.embedders.registry import get_spec, is_builtin, known_models
from remem.embedders.spec import ModelFiles, ModelSpec, verify_model_files
from remem.errors import ModelMismatchError
from remem.types import Tip

if TYPE_CHECKING:
    from remem.embedders.base import Embedder
    from remem.embedders.runner import OnnxEmbedder
    from remem.types import ModelInfo


@dataclass(frozen=True)
class FileProblem:
    """One installed file that ``verify`` re-hashed: ``problem`` is None when it is intact."""

    model: str
    path: str
    problem: str | None


@dataclass(frozen=True)
class ModelChoice:
    """The embedder a store runs, and for a new store the notes that say which model (and a Tip)."""

    embedder: OnnxEmbedder
    notes: tuple[str, ...] = ()


def _runner(spec: ModelSpec, files: ModelFiles) -> OnnxEmbedder:
    """The embedder that runs ``files`` as ``spec`` says (the boundary where numpy is first imported:
    listing and keyword search never get here)."""
    from remem.embedders.runner import OnnxEmbedder  # noqa: PLC0415 - numpy, onnxruntime

    return OnnxEmbedder.of(spec, files)


@functools.lru_cache(maxsize=2)
def _own_model(directory: Path) -> tuple[ModelSpec, ModelFiles]:
    """A user's own model, described (and its files hashed) once per process."""
    return load_model_dir(directory)


class ModelCatalog:
    """The models of one installation: ``models_dir`` (pulled models), ``model_dir`` (a user's own)."""

    def __init__(
        self,
        models_dir: Path | Callable[[], Path],
        model_dir: Path | None = None,
        endpoint: str = DEFAULT_ENDPOINT,
        new_store_model: str | None = None,
    ) -> None:
        """Look for pulled models in ``models_dir`` (or in what a function gives when models are
        first looked up) and for a user's own model in ``model_dir``; ``pull`` from the Hugging
        Face ``endpoint`` (or a mirror of it). A new store starts with ``new_store_model`` when given
        (EmbedderError now if remem does not know it; when the store is made if it is not installed)."""
        self._models_dir = models_dir
        self.model_dir = model_dir
        self.endpoint = endpoint
        self.new_store_model = None if new_store_model is None else get_spec(new_store_model).name

    @property
    def models_dir(self) -> Path:
        """Where pulled models live."""
        if callable(self._models_dir):
            self._models_dir = self._models_dir()
        return self._models_dir

    @property
    def cache(self) -> ModelCache:
        """Where pulled models live, by model."""
        return ModelCache(self.models_dir)

    def own_model(self) -> tuple[ModelSpec, ModelFiles] | None:
        """The user's own model, or None when no ``model_dir`` was given."""
        return None if self.model_dir is None else _own_model(self.model_dir)

    def spec(self, name: str) -> ModelSpec:
        """A built-in model's description; EmbedderError if remem does not know the name."""
        return get_spec(name)

    def load(self, name: str, *, verify: bool) -> OnnxEmbedder:
        """The embedder of a model by name: the user's own model when its name matches, else the
        built-in model's (EmbedderError when it is not installed). With ``verify`` a built-in
        model's files are hashed now (they always are before a session is made from them)."""
        own = self.own_model()
        if own is not None and own[0].name == name:
            return _runner(*own)
        return self._builtin(self.spec(name), verify=verify)

    def _builtin(self, spec: ModelSpec, *, verify: bool) -> OnnxEmbedder:
        files = self.cache.locate(spec)
        if verify:
            verify_model_files(spec, files)
        return _runner(spec, files)

    def for_store(self, recorded: ModelInfo | None, location: str) -> ModelChoice:
        """The embedder for a store's recorded model (a new store's choice, with its note, when
        None). ModelMismatchError when this remem cannot run the file the store's vectors came from.
        The caller checks the embedder against the store (``check_model``)."""
        if recorded is None:
            return self._new_store_choice(location)
        notes: tuple[str, ...] = ()
        if self.new_store_model not in (None, recorded.name):
            notes = (
                f"The store at {location} holds vectors of {recorded.name}; {self.new_store_model} is "
                f"for new stores (`remem reindex --model {self.new_store_model}` moves this one).",
            )
        own = self.own_model()
        builtin = [spec.name for spec in known_models()]
        if own is not None:  # given for a store of another model, it is refused by check_model
            return ModelChoice(_runner(*own), notes)
        if recorded.name not in builtin:
            raise ModelMismatchError(
                f"the store at {location} holds vectors of model {recorded.name} ({recorded.dim}-d), "
                f"which this remem cannot run (built in: {', '.join(builtin)}); if it is your own model, "
                "give model_dir DIR (or set REMEM_MODEL_DIR)",
                mentions=("model_dir",),
            )
        spec = self.spec(recorded.name)
        if recorded.sha256 != spec.model_sha256:
            raise ModelMismatchError(unknown_file(location, recorded))
        return ModelChoice(self._builtin(spec, verify=False), notes)

    def _new_store_choice(self, location: str) -> ModelChoice:
        """The model a new store at ``location`` takes, its embedder, and the notes that say which
        (and, for the bundled model, the Tip of a better one)."""
        own = self.own_model()
        if own is not None:
            verify_model_files(*own)
            note = f"New store at {location}, using your model {own[0].name} from {own[1].model.parent}."
            return ModelChoice(_runner(*own), (note,))
        if self.new_store_model is not None:
            named = self.spec(self.new_store_model)
            self.cache.locate(named)  # EmbedderError saying how to install it
            note = f"New store at {location}, using the model {named.name}{_reads(named)}."
            return ModelChoice(self._builtin(named, verify=False), (note,))
        preferred = registry.PREFERRED_MODEL  # (looked up now: tests stand in their own)
        chosen = preferred if self.cache.is_installed(preferred) else registry.BUNDLED_MODEL
        bundled = "the bundled model " if chosen is registry.BUNDLED_MODEL else "the model "
        notes: tuple[str, ...] = (f"New store at {location}, using {bundled}{chosen.name}{_reads(chosen)}.",)
        if chosen is not preferred:
            notes += (
                Tip(
                    f"Better search: `remem model pull {preferred.name}` ({preferred.size / 1e6:.0f} MB), "
                    f"then `remem reindex --model {preferred.name}`.",
                    key=f"pull-{preferred.name}",
                ),
            )
        # not hashed here: the session and the tokenizer are made only from bytes that hash to their
        # pinned sha256, before a first vector (hashing here too would read 23 MB twice)
        return ModelChoice(self._builtin(chosen, verify=False), notes)

    def verify_in_use(self, embedder: Embedder) -> str:
        """Re-hash the files an ONNX embedder runs against their pinned sha256; returns what was
        checked, raises EmbedderError naming a damaged file. Other embedders are not checked."""
        from remem.embedders.runner import OnnxEmbedder  # noqa: PLC0415 - numpy, onnxruntime

        if not isinstance(embedder, OnnxEmbedder):
            return f"{embedder.info.name} (supplied by the caller; not verified)"
        spec = embedder.spec
        verify_model_files(spec, embedder.files if not is_builtin(spec) else self.cache.files(spec))
        return f"{spec.name} files verified (sha256)"

    def describe(self, store_model: str | None = None) -> list[dict[str, Any]]:
        """Every model known here as JSON-ready rows: name, dim, pooling, max_tokens (a query's
        window), document_tokens (a stored text's windows), size_bytes, state (bundled / installed /
        not installed; your own), whether ``store_model``."""
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
                "document_tokens": spec.document_window,
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
        if not spec.pulled:
            return "bundled"
        return "installed" if self.cache.is_installed(spec) else "not installed"

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
        """Re-hash every installed file of one model or all; a model that is not installed gives
        one row with path "" and problem None."""
        rows = []
        for spec in known_models() if name is None else (self.spec(name),):
            checks = self.cache.verify(spec)
            if not checks:
                rows.append(FileProblem(spec.name, "", None))
            rows += [FileProblem(spec.name, str(c.path), c.problem) for c in checks]
        return rows

    def path(self, name: str) -> Path | None:
        """The ONNX file of an installed model, or None when it is not installed."""
        spec = self.spec(name)
        return self.cache.files(spec).model if self.cache.is_installed(spec) else None


def _reads(spec: ModelSpec) -> str:
    """`` (English)`` for a model that declares it reads English only, `` (multilingual)`` for one that
    reads many; else nothing."""
    reads: dict[tuple[str, ...], str] = {("en",): " (English)", ("multilingual",): " (multilingual)"}
    return reads.get(tuple(spec.languages), "")


def unknown_file(location: str, recorded: ModelInfo) -> str:
    """The error when a store's vectors came from a file of its model that this remem does not run
    (a file of the same model that an earlier remem shipped)."""
    return (
        f"the store at {location} holds vectors of model {recorded.name} ({recorded.dim}-d, "
        f"{recorded.pooling} pooling, sha256 {recorded.sha256[:12]}…) from a file this remem does not "
        f"run (an earlier remem made them); refusing to mix in other vectors: "
        f"`remem reindex --model {recorded.name}` re-embeds the store with the file remem ships, "
        "keeping every memory"
    )
