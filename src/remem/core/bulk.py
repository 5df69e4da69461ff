"""Adding many memories in one transaction: dedup first (duplicates are never embedded), reuse
vectors an export carried when the store's model made them, embed the rest (their ``turns``
documents) in chunks, then re-embed the stored turns whose earlier turns the new ones became."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import remem.checks as checks  # noqa: PLR0402 - the layer rule reads `from remem import` as the public API
from remem.core import arguments, turns
from remem.core.afterwards import afterwards
from remem.errors import InvalidInputError
from remem.reports import BulkResult
from remem.types import text_sha256

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.base import Backend, ProgressFn
    from remem.embedders.base import DocumentEmbeddings, Embedder
    from remem.ingest import Entry
    from remem.types import AddResult, NewMemory

EMBED_CHUNK = 256


def split_duplicates(
    backend: Backend, entries: Sequence[Entry]
) -> tuple[list[Entry], list[tuple[int | None, int]]]:
    """(entries to store, and for each duplicate: the id of the stored memory it repeats, or None
    and the row among the entries to store of the earlier entry it repeats)."""
    fresh: list[Entry] = []
    duplicates: list[tuple[int | None, int]] = []
    seen: dict[tuple[str, str, str], int] = {}
    stored = backend.find_duplicates([entry.memory for entry in entries])
    for entry, existing in zip(entries, stored, strict=True):
        memory = entry.memory
        key = (text_sha256(memory.text), memory.user or "", memory.conversation or "")
        if existing is not None or key in seen:
            duplicates.append((existing, seen.get(key, -1)))
        else:
            seen[key] = len(fresh)
            fresh.append(entry)
    return fresh, duplicates


def embed_documents(
    embedder: Embedder, texts: Sequence[str], progress: ProgressFn | None
) -> DocumentEmbeddings:
    """``embedder.embed_documents(texts)``, with ``progress(windows done, windows)`` as it goes when
    the embedder reports progress (remem's ONNX embedder does; a caller's own need not)."""
    if progress is not None and getattr(embedder, "reports_progress", False):
        reporting: Any = embedder
        documents: DocumentEmbeddings = reporting.embed_documents(texts, progress=progress)
        return documents
    return embedder.embed_documents(texts)


#: What ``refreshed`` names when it was left undone.
REFRESH_STEP = "giving the turns after it their new context (`remem reindex` does it)"


def refreshed(
    backend: Backend, embedder: Callable[[], Embedder | None], ids: Sequence[int], notes: list[str]
) -> None:
    """After an add committed: the stored turns it came before (``ids``) get their contexts, and
    their vectors when ``embedder()`` gives one; an error becomes a note (``afterwards``)."""
    if ids:
        with afterwards(notes, REFRESH_STEP):
            turns.refresh(backend, embedder(), ids)


def add_one(
    backend: Backend, embedder: Embedder, memory: NewMemory, progress: ProgressFn | None, notes: list[str]
) -> AddResult:
    """Embed one memory's document and store it (a duplicate added meanwhile comes back as one);
    the stored turns it comes before are re-embedded (``refreshed``)."""
    (doc,), followers = turns.for_new(backend, [memory])
    vectors = embed_documents(embedder, [doc.document], progress).windows[0]
    added = backend.add_many([memory], [vectors], embedder.info, [doc.context])[0]
    if not added.duplicate:
        refreshed(backend, lambda: embedder, followers, notes)
    return added


def add_waiting(
    backend: Backend, embedder: Callable[[], Embedder], memory: NewMemory, notes: list[str]
) -> AddResult:
    """Store one memory (with its context) to be embedded later; the stored turns it comes before
    get their contexts, and their vectors when the store has a model (``embedder`` is called, and
    the model loaded, only then; ``refreshed``)."""
    (doc,), followers = turns.for_new(backend, [memory])
    added = backend.add_pending([memory], [doc.context])[0]
    if not added.duplicate:
        refreshed(backend, lambda: embedder() if backend.model is not None else None, followers, notes)
    return added


def embed_texts(embedder: Embedder, texts: Sequence[str], progress: ProgressFn | None) -> list[FloatArray]:
    """Each text's window vectors, embedded in chunks; ``progress(done, total)`` after each chunk."""
    embedded: list[FloatArray] = []
    for start in range(0, len(texts), EMBED_CHUNK):
        embedded.extend(embedder.embed_documents(texts[start : start + EMBED_CHUNK]).windows)
        if progress is not None:
            progress(len(embedded), len(texts))
    return embedded


def store_entries(
    backend: Backend,
    embedder: Callable[[], Embedder],
    entries: Sequence[Entry],
    progress: ProgressFn | None = None,
    notes: list[str] | None = None,
) -> BulkResult:
    """Store entries in one transaction (see the module docstring); ``embedder`` is called only
    when something needs embedding or checking. Nothing after the commit reads the store for the
    result; the turns refreshed after it are ``refreshed`` (a failure: a note in ``notes``)."""
    import numpy as np  # noqa: PLC0415 - keeps numpy off the startup path

    from remem.arrays import unit_rows  # noqa: PLC0415

    result = BulkResult()
    fresh, duplicates = split_duplicates(backend, entries)
    added: list[AddResult] = []
    if fresh:
        model = embedder()
        stamp = model.info
        windows: list[FloatArray | None] = [None] * len(fresh)
        for row, entry in enumerate(fresh):
            if entry.vector is not None and entry.model == stamp:
                carried = np.frombuffer(entry.vector, dtype="<f4").reshape(-1, stamp.dim)
                if unit_rows(carried):  # an export is input: a scaled or NaN vector is embedded again
                    windows[row] = carried
                    result.reused_vectors += 1
        docs, followers = turns.for_new(backend, [e.memory for e in fresh])
        todo = [row for row, found in enumerate(windows) if found is None]
        for row, rows in zip(
            todo, embed_texts(model, [docs[r].document for r in todo], progress), strict=True
        ):
            windows[row] = rows
        added = backend.add_many(
            [e.memory for e in fresh], [w for w in windows if w is not None], stamp, [d.context for d in docs]
        )
        result.added = [r.id for r in added if not r.duplicate]
        result.duplicates = [r.id for r in added if r.duplicate]  # added by another process meanwhile
        refreshed(backend, lambda: model, followers, [] if notes is None else notes)
    result.duplicates += [added[row].id if found is None else found for found, row in duplicates]
    return result


def export_entries(
    records: Iterable[Mapping[str, Any]], skip_invalid: bool, max_chars: int
) -> tuple[Iterator[Entry], list[int]]:
    """The entries of export records (numbered from 1; texts of at most ``max_chars``), made as
    they are read, and the list the numbers of the bad ones skipped go into as they are met;
    without ``skip_invalid`` a bad record is an InvalidInputError naming it. TypeError (at once)
    for ``records`` that are not a collection (one record, a str)."""
    from remem.ingest import export_entry  # noqa: PLC0415

    records = checks.items(records, "records", "an iterable of export records (mappings)")
    skipped: list[int] = []
    skip_invalid = checks.flag(skip_invalid, "skip_invalid")

    def entries() -> Iterator[Entry]:
        for number, record in enumerate(records, start=1):
            try:
                entry = export_entry(record, number, max_chars)
            except InvalidInputError as exc:
                if not skip_invalid:
                    raise arguments.within(exc, f"record {number}: {exc}; nothing was imported") from None
                skipped.append(number)
                continue
            yield entry

    return entries(), skipped


def embed_pending(
    backend: Backend, embedder: Callable[[], Embedder], progress: ProgressFn | None, limit: int | None = None
) -> int:
    """Embed the memories waiting for their vectors, a chunk per transaction, until none is left,
    ``limit`` are done, or a chunk makes no progress (its memories changed meanwhile)."""
    total, done = backend.pending_count(), 0
    while (room := EMBED_CHUNK if limit is None else min(EMBED_CHUNK, limit - done)) > 0 and (
        rows := backend.pending(room)
    ):
        model = embedder()
        windows = model.embed_documents(turns.for_rows(backend, rows)).windows
        attached = backend.attach_vectors(
            [(mid, text, rows_) for (mid, text), rows_ in zip(rows, windows, strict=True)], model.info
        )
        done += len(attached)
        if progress is not None:
            progress(min(done, total), max(total, done))
        if not attached:
            break
    return done
