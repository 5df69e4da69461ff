"""Moving memories out and keeping a store healthy: export records, reindex (with re-embedding),
doctor — above any back-end."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import remem.checks as checks  # noqa: PLR0402 - the layer rule reads `from remem import` as the public API
from remem.core import bulk, growth, turns
from remem.errors import InvalidInputError, StoreError
from remem.reports import Check, DoctorReport, ReembedReport, ReindexReport
from remem.types import Filters, Memory, ModelInfo, memory_record

if TYPE_CHECKING:
    from remem.backends.base import Backend, ProgressFn
    from remem.embedders.base import Embedder
    from remem.embedders.catalog import ModelCatalog

EXPORT_CHUNK = 1000
#: The vector index kinds a reindex can ask for ("auto": HNSW from 50,000 vectors up, else exact).
INDEX_KINDS = ("exact", "hnsw", "auto")
#: The HNSW settings (name, largest sane value): a graph degree of thousands writes gigabytes, a
#: beam past 2^31 overflows FAISS — refused before anything is saved.
HNSW_BOUNDS = (("hnsw.m", 128), ("hnsw.ef_construction", 4096), ("hnsw.ef_search", 65536))


@dataclass(frozen=True)
class ReindexOutcome:
    """What ``reindex`` did: the re-embedding (None without a model), the index rebuild, how many
    memories waiting for their vectors (added with ``embed=False``) it embedded, and the seconds
    the whole of it took (``rebuilt.seconds``: the index rebuild's alone)."""

    reembedded: ReembedReport | None
    rebuilt: ReindexReport
    embedded_pending: int = 0
    seconds: float = 0.0


def _batches(memories: Iterator[Memory], size: int) -> Iterator[list[Memory]]:
    batch: list[Memory] = []
    for memory in memories:
        batch.append(memory)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def export_records(backend: Backend, filters: Filters, with_vectors: bool) -> Iterator[dict[str, Any]]:
    """Each filtered memory's JSON record in id order; with vectors, ``vector`` holds its windows
    (``windows`` × dim float32 values, base64) and the model that made them. Every record comes
    from one state of the store (a snapshot), however long the reader takes."""
    with backend.snapshot():
        model = backend.model if with_vectors else None
        if model is None:  # a record per memory as it is read: a stream holds one at a time
            yield from (memory_record(memory) for memory in backend.iter_all(filters))
            return
        for batch in _batches(backend.iter_all(filters), EXPORT_CHUNK):  # vectors read a batch at a time
            vectors = backend.vectors_of_memories([m.id for m in batch])
            for memory in batch:
                yield _with_vectors(memory_record(memory), vectors.get(memory.id, []), model)


def _with_vectors(record: dict[str, Any], windows: list[bytes], model: ModelInfo) -> dict[str, Any]:
    """``record`` with its memory's vector ``windows`` (if any) and the model that made them."""
    if windows:
        record["vector"] = {
            "model": asdict(model),
            "windows": len(windows),
            "float32_base64": base64.b64encode(b"".join(windows)).decode("ascii"),
        }
    return record


def reindex_options(
    index: str | None, hnsw: tuple[int | None, int | None, int | None], model: str | None
) -> tuple[str | None, tuple[int | None, int | None, int | None], str | None]:
    """``reindex``'s index kind (exact, hnsw, auto or None), HNSW settings (m, ef_construction,
    ef_search: each None or within ``HNSW_BOUNDS``) and model name, checked: TypeError for a wrong
    type, InvalidInputError for a bad value."""
    index, model = checks.optional_string(index, "index"), checks.optional_string(model, "model")
    if index is not None and index not in INDEX_KINDS:
        raise InvalidInputError(
            f"index must be one of {', '.join(INDEX_KINDS)}, not {index!r}", parameter="index"
        )
    settings = tuple(checks.items(hnsw, "hnsw", "a tuple (m, ef_construction, ef_search)"))
    if len(settings) != len(HNSW_BOUNDS):
        raise TypeError(f"hnsw must be a tuple (m, ef_construction, ef_search), not {len(settings)} values")
    numbers = [checks.optional_integer(value, "each of hnsw") for value in settings]
    for (name, largest), value in zip(HNSW_BOUNDS, numbers, strict=True):
        if value is not None and not 2 <= value <= largest:
            raise InvalidInputError(
                f"{name} must be at least 2 and at most {largest}, not {value}", parameter=name
            )
    m, construction, search = numbers
    return index, (m, construction, search), model


def reindex(
    backend: Backend,
    catalog: ModelCatalog,
    stores_embedder: Callable[[], Embedder],
    asked: tuple[str | None, tuple[int | None, int | None, int | None], str | None, bool],
    progress: ProgressFn | None,
) -> ReindexOutcome:
    """Embed the memories waiting for vectors (without a model), re-embed with the ``asked`` model
    when there is one (its files verified first; ``force``: even the store's own), then rebuild the
    indexes and turns' contexts. Every argument (index, hnsw, model, force) is checked before
    anything is done (``reindex_options``); ``seconds`` is the whole of it."""
    started = time.monotonic()
    index, hnsw, model = reindex_options(*asked[:3])
    force, progress = checks.flag(asked[3], "force"), checks.callback(progress)
    waiting = (  # not watched: the rebuild below builds what the advice would ask for
        bulk.embed_pending(backend, stores_embedder, progress, None)
        if model is None and backend.pending_count()
        else 0
    )
    reembedded = None
    if model is not None:
        embedder = catalog.load(model, verify=True)
        reembedded = backend.reembed(embedder.info, turns.whole_store(backend, embedder), progress, force)
    rebuilt = backend.reindex(index, hnsw, force)
    turns.restore_contexts(backend)
    return ReindexOutcome(reembedded, rebuilt, waiting, time.monotonic() - started)


def doctor(
    backend: Backend, catalog: ModelCatalog, embedder: Callable[[], Embedder], repair: bool
) -> DoctorReport:
    """The back-end's checks (after its repairs, with ``repair``), the model check: the files of the
    store's model re-hashed (``ModelCatalog.verify_in_use``), and the index advice (``growth``)."""
    checks, repaired = backend.doctor(repair)
    staged, discarded = _staged_ingests(backend, repair)
    model = _model_check(backend, catalog, embedder)
    said = growth.advice(growth.state_of(backend))
    return DoctorReport((*checks, *staged, model), (*repaired, *discarded), () if said is None else (said,))


def _staged_ingests(backend: Backend, repair: bool) -> tuple[list[Check], list[str]]:
    """The check of the staging area, shown only when an ingest is staged there (interrupted, or
    running now): not a fault. With ``repair``, the runs idle for longer than ``BUSY`` (not being
    written by an ingest still running) are discarded first: (checks, what was repaired)."""
    from remem.backends.staging import BUSY, describe  # noqa: PLC0415

    staging = backend.staging()
    try:
        dropped = staging.discard_idle(BUSY) if repair else []
        runs = staging.runs()
    except StoreError as exc:
        return [Check("staged ingests", False, f"cannot be read: {exc}")], []
    finally:
        staging.close()
    rows = sum(run.rows for run in dropped)
    repaired = (
        [f"discarded {len(dropped)} interrupted ingest(s) ({rows:,} entries staged)"] if dropped else []
    )
    return ([Check("staged ingests", True, describe(runs), repairable=True)] if runs else []), repaired


def _model_check(backend: Backend, catalog: ModelCatalog, embedder: Callable[[], Embedder]) -> Check:
    try:
        recorded = backend.model
    except StoreError as exc:  # a damaged database: the other checks say so
        return Check("model", False, f"cannot be read: {exc}")
    if recorded is None:
        return Check("model", True, "none recorded yet")
    try:
        detail = catalog.verify_in_use(embedder())
    except Exception as exc:  # any failure to find or verify the model is the finding
        return Check("model", False, str(exc))
    return Check("model", True, detail)
