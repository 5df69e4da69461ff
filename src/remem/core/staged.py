"""A big ingest, staged: input of any size at a bounded memory, all or nothing, resumable.

An ingest of more than ``STAGE_BATCH`` entries (``Memories.add_many``, ``add_entries``, ``import_``;
``remem add --lines/--jsonl``, ``remem import``) is read as a stream and goes through the store's
staging area (``Backend.staging``), which no search, list or export reads:

1. Stage: each batch of entries is checked for duplicates (of a stored memory, of an earlier
   entry); its new memories outside a conversation get their vectors (an export's, when this
   store's model made them, else embedded), and the batch is committed with them.
2. Conversations: the new turns of each conversation get their documents and contexts over all of
   the input's turns and the stored ones (``turns``, as an ingest held in memory does), and are
   embedded, committed a batch at a time.
3. Move: the ids of the memories the duplicates repeat are looked up; then one transaction adds
   every staged memory that is not a duplicate, in input order.
4. Report: the ids of duplicates of an earlier entry of the input are looked up, the run is
   discarded, and stored turns that new ones came before are refreshed. The move committed, so an
   error in any of these (a lost connection) becomes a note naming what was left undone and the
   command that does it (``core.afterwards``): a committed ingest is never reported as failed.

A run is found again by the hash of its first batch, and each row keeps the hash of the entry it
was made from: running the same ingest again after an interruption keeps every row (and vector)
it finds unchanged and embeds only the rest. Until the move commits no memory of it is visible.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from itertools import chain, islice
from typing import TYPE_CHECKING

from remem.backends.staging import (
    EXPIRE_AFTER,
    Moved,
    MoveDigest,
    StagedRow,
    memory_json,
    memory_of,
    model_json,
)
from remem.core import bulk, turns
from remem.core.afterwards import afterwards
from remem.reports import BulkResult
from remem.types import text_sha256

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.base import Backend, ProgressFn, Staging
    from remem.backends.staging import StagedRun
    from remem.embedders.base import Embedder
    from remem.ingest import Entry

#: Entries staged per committed transaction, and what an ingest of this many or fewer does in
#: memory instead. 2,048 memory-sized texts are about two seconds of the bundled model's embedding
#: on 2 cores (1,100–1,200 a second): what a kill loses at most.
STAGE_BATCH = 2048
#: Staged rows read back a page at a time (conversation turns, duplicates for the report).
PAGE = 2048
#: What is left undone when the staged run cannot be dropped after its move committed.
DISCARD_STEP = (
    "dropping the ingest's staged copy (running the same ingest again drops it; "
    f"else it is dropped after {EXPIRE_AFTER.days} days)"
)


def _ids_step(count: int) -> str:
    """What is left undone when the ids of ``count`` duplicates could not be looked up after the move."""
    return (
        f"looking up the memories {count:,} duplicate(s) repeat (-1 in the report; `remem search` or "
        "running the same ingest again finds them)"
    )


def ingest(
    backend: Backend,
    embedder: Callable[[], Embedder],
    entries: Iterable[Entry],
    progress: ProgressFn | None = None,
    expected: int | None = None,
) -> tuple[BulkResult, list[str]]:
    """Store the entries all or nothing (see the module docstring), reading them once; with more
    than ``STAGE_BATCH`` through the staging area, resuming what an interrupted run of the same
    input staged. Returns the result and notes for a person (a run resumed or expired).
    ``progress(done, total)`` counts entries (``total`` at least ``expected``) when staged."""
    stream = iter(entries)
    head = list(islice(stream, STAGE_BATCH + 1))
    if len(head) <= STAGE_BATCH:
        notes: list[str] = []  # what was left undone after the commit (``bulk.store_entries``)
        return bulk.store_entries(backend, embedder, head, progress, notes), notes
    run = _Ingest(backend, embedder, progress, expected or 0)
    try:
        return run.ingest(chain(head, stream)), run.notes
    finally:
        run.staging.close()


def _batches(entries: Iterable[Entry], size: int) -> Iterator[list[Entry]]:
    iterator = iter(entries)
    while batch := list(islice(iterator, size)):
        yield batch


def _dedup_key(entry: Entry) -> bytes:
    """The memory's deduplication key (text, user, conversation), as 16 bytes."""
    memory = entry.memory
    key = f"{text_sha256(memory.text)}\0{memory.user or ''}\0{memory.conversation or ''}"
    return hashlib.sha256(key.encode()).digest()[:16]


def _thread(entry: Entry) -> str | None:
    found = turns.thread(entry.memory)
    return None if found is None else json.dumps(found)


def _entry_hash(staged: str, entry: Entry) -> bytes:
    """What identifies an entry between runs: its memory and the vector it carried (with its model)."""
    digest = hashlib.sha256(staged.encode())
    if entry.vector is not None and entry.model is not None:
        digest.update(b"\0" + model_json(entry.model).encode() + b"\0")
        digest.update(entry.vector)
    return digest.digest()


def _doc_hash(document: str) -> bytes:
    return hashlib.sha256(document.encode()).digest()


def _blob(windows: FloatArray) -> bytes:
    return windows.astype("<f4").tobytes()


class _Ingest:
    """One staged ingest (the module docstring): what it read, did and found so far."""

    def __init__(
        self, backend: Backend, embedder: Callable[[], Embedder], progress: ProgressFn | None, expected: int
    ) -> None:
        self.backend, self._embedder, self.progress, self.expected = backend, embedder, progress, expected
        self.staging: Staging = backend.staging()
        self._run: StagedRun | None = None
        self.model: Embedder | None = None
        self.digest = MoveDigest()
        self.read = self.done = self.fresh = self.waiting = self.resumed = 0
        self.notes: list[str] = []

    @property
    def run(self) -> StagedRun:
        """The run (begun by the first batch)."""
        assert self._run is not None
        return self._run

    def ingest(self, entries: Iterable[Entry]) -> BulkResult:
        """Stage, embed, move and report (the module docstring)."""
        for batch in _batches(entries, STAGE_BATCH):
            self._stage(batch)
        self.staging.end_input(self.run, self.read)
        followers = self._conversations() if self.waiting else []
        duplicates = self._duplicates() if self.read > self.fresh else []
        moved = Moved()
        if self.fresh or self.resumed:  # resumed with nothing new: the run before may have been
            # killed between its move's commit and the store's derived files (the local vector
            # index); an empty move writes them level with the database again
            moved = self.staging.move(self.run, self._embedder_now().info, self.digest.value())
        result = BulkResult(added=moved.added, duplicates=moved.raced + self._after_the_move(duplicates))
        result.reused_vectors, result.resumed = moved.carried, self.resumed
        with afterwards(self.notes, DISCARD_STEP):
            self.staging.discard(self.run)
        # new turns came before these followers: the model was loaded for those
        bulk.refreshed(self.backend, lambda: self.model, followers, self.notes)
        if self.resumed:
            self.notes.append(
                f"Resumed an interrupted ingest: {self.resumed:,} of its entries were staged already."
            )
        return result

    def _begin(self, hashes: list[bytes]) -> None:
        self._run, expired = self.staging.begin(hashlib.sha256(b"".join(hashes)).hexdigest())
        if expired:
            days = EXPIRE_AFTER.days
            self.notes.append(
                f"Discarded {expired} staged ingest(s) untouched for {days} days (never finished)."
            )

    def _embedder_now(self) -> Embedder:
        """The model (loaded for the first entry that needs it); the run's vectors become its."""
        if self.model is None:
            self.model = self._embedder()
            self._run = self.staging.use_model(self.run, self.model.info)
        return self.model

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(self.done, max(self.expected, self.read))

    def _rows(self, batch: list[Entry], first: int) -> list[StagedRow]:
        """The batch as rows without vectors, duplicates marked; begins the run at the first batch."""
        memories = [memory_json(entry.memory) for entry in batch]
        hashes = [_entry_hash(memory, entry) for memory, entry in zip(memories, batch, strict=True)]
        keys = [_dedup_key(entry) for entry in batch]
        if self._run is None:
            self._begin(hashes)
        duplicate = self._duplicates_of(batch, keys, first)
        rows = [
            StagedRow(first + n, hashes[n], keys[n], _thread(entry), memories[n], duplicate[n])
            for n, entry in enumerate(batch)
        ]
        for row in rows:
            if not row.duplicate:
                self.digest.add(row.seq, row.entry)
                self.fresh, self.waiting = self.fresh + 1, self.waiting + (row.thread is not None)
        if not all(duplicate):
            self._embedder_now()
        return rows

    def _duplicates_of(self, batch: list[Entry], keys: list[bytes], first: int) -> list[bool]:
        """Whether each entry duplicates a stored memory, an entry of an earlier batch or of this one."""
        stored = self.backend.find_duplicates([entry.memory for entry in batch])
        earlier = self.staging.earlier(self.run, keys, first)
        seen: set[bytes] = set()
        flags = []
        for key, found in zip(keys, stored, strict=True):
            flags.append(found is not None or key in earlier or key in seen)
            seen.add(key)
        return flags

    def _stage(self, batch: list[Entry]) -> None:
        """Stage one batch, with the vectors of its new memories outside a conversation; a row
        staged before from the same entry is kept (its vectors too)."""
        first, self.read = self.read, self.read + len(batch)
        rows = self._rows(batch, first)
        staged = self.staging.staged(self.run, first, len(rows))
        writes: list[StagedRow] = []
        flags: list[tuple[int, bool]] = []
        todo: list[tuple[StagedRow, str]] = []
        carried = self._carried(batch, rows) if self.model is not None else {}
        for row, entry in zip(rows, batch, strict=True):
            entry_hash, doc = staged.get(row.seq, (None, None))
            kept = entry_hash == row.entry
            self.resumed += kept
            needs_vectors = not row.duplicate and doc is None and (row.thread is None or row.seq in carried)
            if kept and not needs_vectors:  # a turn without vectors gets them with its conversation
                flags.append((row.seq, row.duplicate))
            elif row.duplicate:
                writes.append(row)
            elif row.seq in carried:
                writes.append(replace(row, vector=carried[row.seq], carried=True))
            elif row.thread is not None:
                writes.append(row)
            else:
                todo.append((row, entry.memory.text))
        writes += self._embedded(todo)
        self.staging.put(self.run, writes, flags)
        self.done += sum(row.duplicate or row.thread is None for row in rows)
        self._report()

    def _carried(self, batch: list[Entry], rows: list[StagedRow]) -> dict[int, bytes]:
        """seq → the vectors an export carried for a new entry, when this store's model made them
        and they are unit vectors (an export is input: scaled or NaN ones are embedded again);
        checked a batch at a time (2,048 384-d vectors: 1.6 µs an entry, 9.4 one at a time)."""
        import numpy as np  # noqa: PLC0415 - keeps numpy off the startup path

        from remem.arrays import UNIT_TOLERANCE  # noqa: PLC0415

        model = self._embedder_now().info
        given = [
            (row.seq, entry.vector)
            for row, entry in zip(rows, batch, strict=True)
            if not row.duplicate and entry.vector is not None and entry.model == model
        ]
        if not given:
            return {}
        matrix = np.frombuffer(b"".join(vector for _, vector in given), dtype="<f4").reshape(-1, model.dim)
        with np.errstate(all="ignore"):
            good = np.isfinite(matrix).all(axis=1) & (
                np.abs(np.linalg.norm(matrix, axis=1) - 1) <= UNIT_TOLERANCE
            )
        starts = np.cumsum([0] + [len(vector) // (4 * model.dim) for _, vector in given[:-1]])
        kept = np.logical_and.reduceat(good, starts)
        return {seq: vector for (seq, vector), ok in zip(given, kept, strict=True) if ok}

    def _embedded(self, todo: list[tuple[StagedRow, str]]) -> list[StagedRow]:
        """The rows with the vectors of their documents (``todo``: row, document)."""
        if not todo:
            return []
        windows = bulk.embed_texts(self._embedder_now(), [document for _, document in todo], None)
        return [
            replace(row, vector=_blob(rows), doc=_doc_hash(document))
            for (row, document), rows in zip(todo, windows, strict=True)
        ]

    def _threads(self) -> Iterator[list[StagedRow]]:
        """The staged new turns, a conversation (thread) at a time, each in input order."""
        after: tuple[str, int] | None = None
        group: list[StagedRow] = []
        while page := self.staging.conversation_rows(self.run, after, PAGE):
            for row in page:
                if group and row.thread != group[0].thread:
                    yield group
                    group = []
                group.append(row)
            after = (str(page[-1].thread), page[-1].seq)
        if group:
            yield group

    def _conversations(self) -> list[int]:
        """Give the new turns their documents, contexts and vectors; the stored turns to refresh."""
        followers: list[int] = []
        pending: list[tuple[StagedRow, turns.Doc]] = []
        for group in self._threads():
            docs, after = turns.for_new(self.backend, [memory_of(row.memory) for row in group])
            followers += after
            pending += zip(group, docs, strict=True)
            if len(pending) >= STAGE_BATCH:
                self._embed_turns(pending)
                pending = []
        self._embed_turns(pending)
        return followers

    def _embed_turns(self, pending: list[tuple[StagedRow, turns.Doc]]) -> None:
        """Stage the turns' contexts, and vectors of their documents unless staged (or carried) already."""
        items: list[tuple[int, str, bytes | None, bytes | None]] = []
        todo: list[tuple[StagedRow, str]] = []
        for row, doc in pending:
            if row.carried or row.doc == _doc_hash(doc.document):
                items.append((row.seq, doc.context, None, None))
            else:
                todo.append((replace(row, context=doc.context), doc.document))
        items += [(row.seq, row.context, row.doc, row.vector) for row in self._embedded(todo)]
        if items:
            self.staging.set_vectors(self.run, items)
        self.done += len(pending)
        self._report()

    def _duplicates(self, known: list[int] | None = None) -> list[int]:
        """The ids of the memories the input's duplicates duplicate, in input order (-1: none found,
        as for a duplicate of an earlier entry before the move, or of a memory forgotten meanwhile);
        with ``known`` (such a list), only its pages with a -1 are looked up again."""
        ids: list[int] = []
        after = -1
        while page := self.staging.duplicate_rows(self.run, after, PAGE):
            done = None if known is None else known[len(ids) : len(ids) + len(page)]
            if done is not None and len(done) == len(page) and -1 not in done:
                ids += done
            else:
                found = self.backend.find_duplicates([memory_of(row.memory) for row in page])
                ids += [memory_id or -1 for memory_id in found]
            after = page[-1].seq
        return ids

    def _after_the_move(self, before: list[int]) -> list[int]:
        """The duplicates' ids, from those looked up ``before`` the move: a duplicate of an earlier
        entry of the input (-1 then) is looked up again, left -1 with a note when that fails."""
        if -1 not in before:
            return before
        with afterwards(self.notes, _ids_step(before.count(-1))):
            return self._duplicates(before)
        return before
