"""The store: keeps SQLite records and the vector index consistent, under one directory.

Writers hold an exclusive OS lock on ``write.lock`` while they change anything; each change commits
to SQLite (the truth, with a new generation and the vector ids it deleted) and nothing else. The
index file is a checkpoint: readers take no lock, read it and catch it up from what changed since
(``sync``); once the lag passes its bound (``sync.bound``) it is rewritten, without the writers'
lock, and swapped in atomically (``checkpoints.rewrite``).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from remem.backends import pooling
from remem.backends.local import pending, pooled, stored_heads, tokens
from remem.backends.local.background import Background, Paced
from remem.backends.local.connections import Connections
from remem.backends.local.files import DB_FILE, open_database
from remem.backends.local.guard import translating
from remem.backends.local.home import Home
from remem.backends.local.records import Records
from remem.backends.local.settings import IndexSettings, write_model
from remem.backends.local.transactions import atomic, snapshot
from remem.backends.shapes import check_same_model, contexts_of, windows_of
from remem.errors import ModelChangedError, StoreError
from remem.types import AddResult, Filters, Memory, ModelInfo, NewMemory, text_sha256, utc_now_iso

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.base import Coverage, EmbedFn, PoolAnswer, PoolRequest, ProgressFn, Scored, TurnTime
    from remem.backends.links import Link, Revival
    from remem.backends.local.lanes import LocalVectorLane
    from remem.backends.local.staged import LocalStaging
    from remem.backends.local.vectors import VectorIndex
    from remem.backends.local.writelog import WriteLog
    from remem.backends.shapes import IndexState
    from remem.reports import Check, CompactReport, ReembedReport, ReindexReport, StoreStats

#: At most this share of a long-lived process's time goes to taking its stored keyword heads again.
HEADS_SHARE = 0.1


@translating
class LocalBackend(tokens.TokenRecords):
    """A memory store in one directory. SQLite is the truth; the vector index is derived from it.
    Threads may share it: each has its own connection (``connections``); the loaded index is locked."""

    def __init__(self, directory: Path, records: Records) -> None:
        """Use ``LocalBackend.open``; this wraps an already-open database."""
        self.directory = directory
        self.location = str(directory)
        self.records = records
        #: The directory and records the helpers (reindex, re-embed, doctor, stats) work on.
        self.home = Home(directory, records)
        self._index: VectorIndex | None = None
        self._index_lock = threading.RLock()  # held while the loaded index is synced, searched or changed
        self._resident = False  # searches keep the pages of a mapped index file (``warm_up``)
        self._upkeep = Background()  # a long-lived process's checkpoint and keyword heads
        self._heads_pace = Paced(HEADS_SHARE)
        #: Problems remem repaired by itself while serving this store (for the caller to report).
        self.warnings: list[str] = []

    @classmethod
    def open(cls, directory: Path, *, create: bool) -> LocalBackend:
        """Open the store in ``directory``; with ``create``, make it (0700 dir, 0600 files) if absent.

        Raises StoreNotFoundError when it does not exist and ``create`` is false, StoreError when
        the directory is unusable, StoreCorruptError when the database file is damaged.
        """
        connections = Connections(open_database(directory, create), directory / DB_FILE, str(directory))
        return cls(directory, Records(connections))

    def close(self) -> None:
        """Close the database (this thread's connection now, every other thread's on its next use);
        every later call raises StoreClosedError."""
        self.records.close()

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def index_path(self) -> Path:
        """Where the vector index file lives."""
        return self.home.index_path

    @property
    def settings(self) -> IndexSettings:
        """The index kind and HNSW parameters this store is configured with."""
        return self.home.settings

    @property
    def model(self) -> ModelInfo | None:
        """The model whose vectors this store holds, or None if it holds none yet."""
        return self.home.model

    def check_model(self, model: ModelInfo) -> None:
        """Raise ModelMismatchError unless the store holds no vectors yet or was made by ``model``."""
        check_same_model(str(self.directory), self.model, model)

    def find_duplicate(self, memory: NewMemory) -> int | None:
        """The id of an identical text already stored for the same user and conversation."""
        return self.records.find_duplicate(text_sha256(memory.text), memory.user, memory.conversation)

    def find_duplicates(self, memories: Sequence[NewMemory]) -> list[int | None]:
        """For each memory, in order, ``find_duplicate``'s answer (a batch of hashes a statement)."""
        return self.records.find_duplicates([(text_sha256(m.text), m.user, m.conversation) for m in memories])

    def find_keys(self, keys: Sequence[tuple[str, str | None, str | None]]) -> list[int | None]:
        """For each (text hash, user, conversation), the id stored with it, if any."""
        return self.records.find_duplicates(keys)

    def add(self, memory: NewMemory, vectors: FloatArray, model: ModelInfo) -> AddResult:
        """Store one memory with its unit vector(s) (see ``add_many``)."""
        return self.add_many([memory], [vectors], model)[0]

    def add_many(
        self,
        memories: Sequence[NewMemory],
        vectors: Sequence[FloatArray] | FloatArray,
        model: ModelInfo,
        contexts: Sequence[str] | None = None,
    ) -> list[AddResult]:
        """Store memories with their unit vectors (and contexts) in one transaction.

        ``vectors[i]`` belongs to memory i: one vector (dim,) or its windows (w, dim), w ≥ 1; a
        (n, dim) matrix gives each memory one vector. A memory whose text is already stored for the
        same user/conversation (or earlier in this batch) is not stored again; its result carries
        the existing id and ``duplicate=True``.
        """
        windows = windows_of(vectors, len(memories), model.dim)
        results: list[AddResult] = []
        with self.writing(model):
            created_at = utc_now_iso()
            for memory, rows, context in zip(memories, windows, contexts_of(contexts, memories), strict=True):
                blobs = [row.astype("<f4").tobytes() for row in rows]
                results.append(self.records.add(memory, blobs, created_at, context))
        return results

    def edit(
        self,
        memory_id: int,
        text: str,
        vectors: FloatArray,
        model: ModelInfo,
        expected_sha256: str | None = None,
        context: str = "",
    ) -> Memory:
        """Replace a memory's text, context and vector(s), keeping its id and created_at; records
        updated_at (``changes.edit`` says what it raises)."""
        from remem.backends.local import changes  # noqa: PLC0415 - `list` never changes a memory

        return changes.edit(self.writing, memory_id, text, vectors, model, expected_sha256, context)

    def refile(
        self,
        memory_id: int,
        tags: Sequence[str] | None,
        meta: Mapping[str, str] | None,
        expected_sha256: str | None = None,
        owner: tuple[str | None] | None = None,
    ) -> Memory:
        """Replace a memory's tags, meta and/or user and its keyword terms (``changes.refile``)."""
        from remem.backends.local import changes  # noqa: PLC0415 - `list` never changes a memory

        return changes.refile(self.writing, memory_id, (tags, meta, owner), expected_sha256)

    def forget(self, memory_ids: Sequence[int]) -> list[int]:
        """Delete memories (texts, tags, terms, vectors); returns the ids that existed."""
        model = self.model
        with self.writing(model) as (index, _):
            vectors = self.records.vectors_of_memories(memory_ids)
            deleted = self.records.delete(memory_ids)
            index.remove([vid for mid in deleted for vid, _ in vectors.get(mid, [])])
        return deleted

    def supersede(self, wanted: Sequence[Link]) -> None:
        """Write supersede links in one transaction (``links``; all or none)."""
        with self.writing(None) as (_, records):
            records.supersede(wanted)

    def revive(
        self, memory_id: int, supersedes: int | None, expires_at: str | None, at: str
    ) -> Revival | None:
        """Make a stored memory current again in one transaction (``Records.revive``)."""
        with self.writing(None) as (_, records):
            return records.revive(memory_id, supersedes, expires_at, at)

    @contextlib.contextmanager
    def writing(self, model: ModelInfo | None) -> Iterator[tuple[WriteLog, Records]]:
        """A write transaction under the store lock; the writer tells the yielded log which vector
        ids it deletes.

        On success the transaction commits with a new generation and those ids logged; the index
        file is left as it is (a checkpoint) unless the lag since it passed its bound: then it is
        rewritten after the commit, without the lock (``checkpoint_if_behind``; a failure is a
        warning: the database has the change). On error nothing is changed.
        """
        from remem.backends.local.writelog import WriteLog  # noqa: PLC0415

        with self.write_lock():
            if model is not None:
                self.check_model(model)
            log = WriteLog()
            with atomic(self.records.conn):
                if model is not None and self.model is None:
                    write_model(self.records, model)
                yield log, self.records
                self.records.log_deleted(self.records.bump_generation(), log.removed)
        if model is not None or self._resident:
            self.checkpoint_if_behind()

    def checkpoint_if_behind(self) -> None:
        """Rewrite the index checkpoint when the vectors added or deleted since it was saved passed
        its bound (``sync.bound``; or it is missing), holding no lock while it writes: in this
        thread, or — in a long-lived process (``warm_up``) — in a thread of its own from half the
        bound on, so that no caller waits for it (``checkpoints.rewrite``); that thread also takes
        the keyword lane's stored heads again when they are behind (``stored_heads.behind``)."""
        if self._resident and (self._vectors_behind(0.5) or stored_heads.behind(self.records.conn)):
            self._upkeep_in_background()
        elif not self._resident and self._vectors_behind(1.0):
            self.checkpoint()

    def _vectors_behind(self, share: float) -> bool:
        """Whether the index checkpoint is ``share`` of its bound behind (or missing), with vectors."""
        from remem.backends.local import sync  # noqa: PLC0415 - numpy

        return self.model is not None and sync.behind(
            self.records, self.index_path, self.settings.built_kind, share=share
        )

    def checkpoint(self, *, warn: bool = True, threads: int | None = None) -> None:
        """Write the index file level with the database now, holding no lock while it writes, and
        prune the log of deletions it holds (``checkpoints.rewrite``: nothing when another process
        or thread is rewriting it). A failure is a warning (``warn``), else silent: a search's, on
        a store it may not write to. ``threads``: ``checkpoints.rewrite``'s."""
        from remem.backends.local import checkpoints  # noqa: PLC0415 - numpy

        model = self.model
        if model is None:
            return
        try:
            serve = functools.partial(self._serve_new_checkpoint, model.dim) if self._resident else None
            checkpoints.rewrite(self.home, model.dim, serve=serve, threads=threads)
        except StoreError as exc:
            if warn:
                self.warnings.append(f"{exc}; the change is saved, the vector index catches up later")

    def _serve_new_checkpoint(self, dim: int) -> None:
        """Serve the checkpoint just written (loaded and caught up in the rewrite's thread of a
        long-lived process) before the log of deletions is pruned: no search reads it. A file
        needing a repair is left to the next search, one that moved on is caught up there."""
        from remem.backends.local import sync  # noqa: PLC0415 - numpy

        settings = self.settings
        synced = sync.synced_index(self.records, self.index_path, dim, settings.built_kind, settings.hnsw)
        if synced.changed or synced.warning:
            return
        synced.index.keep_resident()
        with self._index_lock:
            self._index = synced.index

    def _upkeep_in_background(self, *, warn: bool = True) -> None:
        """Start the upkeep in a thread of its own unless one is at work (it ends with the store):
        the checkpoint, on one FAISS thread, from half its bound behind; the stored heads if behind,
        paced to at most ``HEADS_SHARE`` of the time."""

        def upkeep() -> None:
            if self._vectors_behind(0.5):
                self.checkpoint(warn=warn, threads=1)
            if stored_heads.behind(self.records.conn) and self._heads_pace.due():
                self._heads_pace.run(self.refresh_heads)

        self._upkeep.start(upkeep, "remem upkeep")

    def refresh_heads(self) -> int:
        """Take the keyword lane's stored heads again (``stored_heads.refresh``); the terms written."""
        return stored_heads.refresh(self.records.conn, self.write_lock)

    def add_pending(
        self, memories: Sequence[NewMemory], contexts: Sequence[str] | None = None
    ) -> list[AddResult]:
        """Store memories (with their contexts) without vectors yet (see ``pending``), in one transaction."""
        return pending.add_pending(self.writing, memories, contexts_of(contexts, memories))

    def set_contexts(self, items: Sequence[tuple[int, str, str]]) -> list[int]:
        """Give memories, as (id, text as read, context), new contexts in one transaction; a memory
        deleted or edited meanwhile is skipped. Returns the ids changed."""
        from remem.backends.local import changes  # noqa: PLC0415

        return changes.set_contexts(self.writing, items)

    def pending(self, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` (id, text) of memories waiting for their vectors, oldest first."""
        return pending.pending(self.records, limit)

    def pending_count(self) -> int:
        """How many memories wait for their vectors."""
        return pending.pending_count(self.records)

    def attach_vectors(
        self, items: Sequence[tuple[int, str, FloatArray]], model: ModelInfo, *, replace: bool = False
    ) -> list[int]:
        """Give pending memories (any, with ``replace``) vectors made for their text (skipping any
        changed meanwhile)."""
        return pending.attach(self.writing, items, model, replace=replace)

    def snapshot(self) -> contextlib.AbstractContextManager[None]:
        """Reads inside see one state of the database (``transactions.snapshot``)."""
        return snapshot(self.records.conn)

    def get_many(self, memory_ids: Sequence[int]) -> dict[int, Memory]:
        """The memories with these ids (missing ids are absent)."""
        return self.records.get_many(memory_ids)

    def texts(self, memory_ids: Sequence[int]) -> dict[int, str]:
        """The texts of the memories with these ids (missing ids are absent)."""
        return self.records.texts(memory_ids)

    def turn_times(self, memory_ids: Sequence[int]) -> dict[int, TurnTime]:
        """User, conversation, created_at and role of those of these memories in a conversation."""
        return self.records.turn_times(memory_ids)

    def candidate_ids(self, filters: Filters) -> list[int]:
        """Ids of every memory the filters select, ascending."""
        return self.records.candidate_ids(filters)

    def superseded_of(self, memory_ids: Sequence[int]) -> list[int]:
        """The ids of the memories these memories superseded, ascending."""
        return self.records.superseded_of(memory_ids)

    def expired_ids(self, now: str) -> list[int]:
        """The ids of the memories whose ``expires_at`` is at or before ``now``, ascending."""
        return self.records.expired_ids(now)

    def vectors_of_memories(self, memory_ids: Sequence[int]) -> dict[int, list[bytes]]:
        """memory id → its window vectors as float32 bytes, in window order."""
        found = self.records.vectors_of_memories(memory_ids)
        return {mid: [blob for _, blob in windows] for mid, windows in found.items()}

    def vector_lane(self, embedded_with: ModelInfo | None = None) -> LocalVectorLane:
        """The vector lane over the synced index; ModelChangedError if the store's model is no
        longer ``embedded_with`` (a re-embed was swapped in), StoreError if it holds no vectors."""
        from remem.backends.local.lanes import LocalVectorLane  # noqa: PLC0415 - numpy only when needed

        model = self.model
        if model is None:
            raise StoreError(f"the store at {self.directory} holds no vectors yet")
        if embedded_with is not None and embedded_with != model:
            raise ModelChangedError(f"the store at {self.directory} switched to model {model.name}; retry")
        index = self.vector_index(model.dim, persist_repairs=True)
        return LocalVectorLane(self.records, index, self._index_lock)

    def warm_up(self, model: ModelInfo) -> None:
        """Load the vector index now and, from now on, keep the pages of its mapped file that
        searches read (this process serves many: see ``mapped``)."""
        self._resident = True
        self.vector_lane(model)

    def pool(self, request: PoolRequest) -> PoolAnswer:
        """A search's pool, its lanes composed inside one snapshot (``pooling.gather``)."""
        with self.snapshot():
            return pooling.gather(self, request, pooled.shortcuts(self.records))

    def keyword_top(
        self,
        text: str,
        filters: Filters,
        k: int,
        among: Sequence[int] | None = None,
        scope: Filters | None = None,
    ) -> list[Scored]:
        """BM25 top ``k`` among the filtered memories, with ``scope``'s statistics if given (see
        ``keywords.top_and_rest``)."""
        return self.records.keyword_search(text, filters, k, among, scope)

    def texts_holding(self, words: Sequence[str], filters: Filters) -> list[tuple[int, str]]:
        """(id, text) of the filtered memories that may hold every one of ``words`` (``fts.holding``)."""
        return self.records.texts_holding(words, filters)

    def keyword_coverage(
        self, text: str, memory_ids: Sequence[int], enough: float, scope: Filters | None = None
    ) -> Coverage:
        """Each memory's share of the query's term weight, capped at ``enough`` (``keywords.coverage``)."""
        return self.records.keyword_coverage(text, memory_ids, enough, scope)

    def reembed(
        self, target: ModelInfo, embed: EmbedFn, progress: ProgressFn | None, force: bool
    ) -> ReembedReport:
        """Re-embed every memory with ``target``: staged, resumable, swapped in at once (``reembed``)."""
        from remem.backends.local.reembed import reembed  # noqa: PLC0415

        return reembed(self.home, target, embed, progress=progress, force=force)

    def staging(self) -> LocalStaging:
        """The store's staging area for big ingests (``staged``: a file of its own)."""
        from remem.backends.local.staged import LocalStaging  # noqa: PLC0415

        return LocalStaging(self.home, self.location, self.writing)

    def reindex(
        self, kind: str | None, hnsw: tuple[int | None, int | None, int | None], force: bool
    ) -> ReindexReport:
        """Rebuild the vector index and keyword table from the database (``maintenance.reindex``)."""
        from remem.backends.local.maintenance import reindex, with_hnsw  # noqa: PLC0415 - numpy, FAISS

        return reindex(self.home, kind, with_hnsw(self.settings.hnsw, hnsw), force)

    def compact(self) -> CompactReport:
        """Write the index checkpoint if any vector was added or deleted since it was saved
        (``checkpoints.compact``: the vectors it caught up, read from its header), and the stored
        keyword heads if they are behind (``refresh_heads``: the terms)."""
        from remem.backends.local import checkpoints  # noqa: PLC0415 - numpy
        from remem.reports import CompactReport  # noqa: PLC0415 - `list` reads no report

        behind = 0 if (model := self.model) is None else checkpoints.compact(self.home, model.dim)
        if behind:
            with self._index_lock:
                self._index = None  # read the new file when next needed
        return CompactReport(behind, self.refresh_heads() if stored_heads.behind(self.records.conn) else 0)

    def stats(self) -> StoreStats:
        """Counts, model, index, disk size and time span (``summary.summarize``)."""
        from remem.backends.local.summary import summarize  # noqa: PLC0415

        return summarize(self.home)

    def index_state(self) -> IndexState:
        """The index kind asked for and built, the vectors, and ``auto``'s size for HNSW (``summary``)."""
        from remem.backends.local.summary import index_state  # noqa: PLC0415

        return index_state(self.home)

    def doctor(self, repair: bool) -> tuple[list[Check], list[str]]:
        """Catch up the index, repair what is asked, then check everything (``doctor.diagnose``)."""
        from remem.backends.local import doctor  # noqa: PLC0415 - numpy, FAISS

        return doctor.diagnose(self.home, repair)

    def newest(self, filters: Filters, limit: int, after: tuple[str, int] | None = None) -> list[Memory]:
        """Up to ``limit`` memories the filters select, newest first, past ``after`` when given."""
        return self.records.newest(filters, limit, after)

    def iter_all(self, filters: Filters | None = None) -> Iterator[Memory]:
        """Every memory (the filters select), in id order."""
        return self.records.iter_all(filters)

    def vector_index(self, dim: int, *, persist_repairs: bool = False) -> VectorIndex:
        """The index, level with SQLite (the one loaded before, caught up, when there is one);
        repairs are saved when asked and no writer holds the lock."""
        from remem.backends.local import checkpoints, sync  # noqa: PLC0415 - numpy and FAISS when needed

        settings = self.settings
        in_snapshot = self.records.conn.in_transaction  # a read snapshot (writers hold the lock)
        with self._index_lock:
            before = None if self._index is None else self._index.header.generation
            synced = sync.cached_index(
                self.records,
                self._index,
                self.index_path,
                dim,
                settings.built_kind,
                settings.hnsw,
                in_snapshot,
            )
            self._index = synced.index  # kept: a long-lived process catches it up instead of re-reading
            if self._resident:
                synced.index.keep_resident()
            if synced.warning:
                self.warnings.append(synced.warning)
            caught_up = synced.index.header.generation != before
            if persist_repairs and synced.changed:
                with contextlib.suppress(BlockingIOError, StoreError), self.write_lock(blocking=False):
                    checkpoints.write(self.home, dim, synced.index)
                    self._index = None
            elif (
                persist_repairs
                and caught_up
                and sync.behind(self.records, self.index_path, settings.built_kind)
            ):
                self._upkeep_in_background(warn=False)  # a search never waits for it
        return synced.index

    def write_lock(self, *, blocking: bool = True) -> contextlib.AbstractContextManager[None]:
        """The store's exclusive writer lock (an OS file lock; BlockingIOError if not ``blocking``
        and it is held). Taking it removes temporary files a killed writer left behind."""
        return self.home.write_lock(blocking=blocking)
