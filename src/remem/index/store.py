"""The store: keeps SQLite records and the vector index consistent, under one directory.

Writers hold an exclusive OS lock on ``write.lock`` while they change anything; each change commits
to SQLite first (the truth, with a new generation) and then rewrites the index file atomically.
Readers take no lock: they read the last complete index file and catch it up from SQLite if a
writer is between its commit and its save.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from remem.errors import InvalidInputError, ModelMismatchError, StoreError
from remem.index.memory import Filters, Memory, ModelStamp, NewMemory, text_sha256, utc_now_iso
from remem.index.records import Records, connect
from remem.index.search import SearchMode, SearchOutcome, run_search
from remem.index.settings import IndexSettings

if TYPE_CHECKING:
    from remem.index.vectors import FloatArray, VectorIndex

DB_FILE = "memories.sqlite3"
INDEX_FILE = "vectors.faiss"
LOCK_FILE = "write.lock"
_MODEL_KEYS = ("model_name", "model_dim", "model_pooling", "model_sha256")


class StoreNotFoundError(StoreError):
    """No store exists at the directory a read-only command was pointed at."""


class ModelChangedError(StoreError):
    """The store was re-embedded with another model while a query was being embedded; retry."""


@dataclass(frozen=True)
class AddResult:
    """The id a text is stored under, and whether it was already there."""

    id: int
    duplicate: bool


def _prepare_directory(directory: Path, create: bool) -> Path:
    if directory.exists() and not directory.is_dir():
        raise StoreError(f"store path {directory} exists and is not a directory")
    db_path = directory / DB_FILE
    if not create:
        if not db_path.is_file():
            raise StoreNotFoundError(f"no remem store at {directory}")
        return db_path
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not os.access(directory, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
        os.close(os.open(db_path, os.O_RDWR | os.O_CREAT, 0o600))
    except OSError as exc:
        raise StoreError(f"cannot use store directory {directory}: {exc.strerror or exc}") from exc
    return db_path


class MemoryStore:
    """A memory store in one directory. SQLite is the truth; the vector index is derived from it."""

    def __init__(self, directory: Path, records: Records) -> None:
        """Use ``MemoryStore.open``; this wraps an already-open database."""
        self.directory = directory
        self.records = records
        #: Problems remem repaired by itself while serving this store (for the caller to report).
        self.warnings: list[str] = []

    @classmethod
    def open(cls, directory: Path, *, create: bool) -> MemoryStore:
        """Open the store in ``directory``; with ``create``, make it (0700 dir, 0600 files) if absent.

        Raises StoreNotFoundError when it does not exist and ``create`` is false, StoreError when
        the directory is unusable, StoreCorruptError when the database file is damaged.
        """
        db_path = _prepare_directory(directory, create)
        # A new (empty) database is initialised by one process at a time: the others wait for it.
        new = db_path.stat().st_size == 0
        with _locked(directory) if new else contextlib.nullcontext():
            return cls(directory, Records(connect(db_path)))

    def close(self) -> None:
        """Close the database connection."""
        self.records.conn.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def index_path(self) -> Path:
        """Where the vector index file lives."""
        return self.directory / INDEX_FILE

    @property
    def settings(self) -> IndexSettings:
        """The index kind and HNSW parameters this store is configured with."""
        return IndexSettings.read(self.records)

    @property
    def model(self) -> ModelStamp | None:
        """The model whose vectors this store holds, or None if it holds none yet."""
        name, dim, pooling, sha = (self.records.get_meta(key) for key in _MODEL_KEYS)
        if name is None or dim is None or pooling is None or sha is None:
            return None
        return ModelStamp(name=name, dim=int(dim), pooling=pooling, sha256=sha)

    def check_model(self, model: ModelStamp) -> None:
        """Raise ModelMismatchError unless the store holds no vectors yet or was made by ``model``."""
        recorded = self.model
        if recorded is not None and recorded != model:
            raise ModelMismatchError(
                f"the store at {self.directory} holds vectors of model {recorded.name} "
                f"({recorded.dim}-d, {recorded.pooling} pooling, sha256 {recorded.sha256[:12]}…); "
                f"refusing to mix in {model.name} ({model.dim}-d, {model.pooling} pooling, "
                f"sha256 {model.sha256[:12]}…)"
            )

    def record_model(self, model: ModelStamp) -> None:
        """Make ``model`` the store's model (inside the caller's transaction)."""
        values = (model.name, model.dim, model.pooling, model.sha256)
        for key, value in zip(_MODEL_KEYS, values, strict=True):
            self.records.set_meta(key, str(value))

    def find_duplicate(self, memory: NewMemory) -> int | None:
        """The id of an identical text already stored for the same user and conversation."""
        return self.records.find_duplicate(text_sha256(memory.text), memory.user, memory.conversation)

    def add(self, memory: NewMemory, vectors: FloatArray, model: ModelStamp) -> AddResult:
        """Store one memory with its unit vector(s) (see ``add_many``)."""
        return self.add_many([memory], [vectors], model)[0]

    def add_many(
        self, memories: Sequence[NewMemory], vectors: Sequence[FloatArray] | FloatArray, model: ModelStamp
    ) -> list[AddResult]:
        """Store memories with their unit vectors in one transaction.

        ``vectors[i]`` belongs to memory i: one vector (dim,) or its windows (w, dim), w ≥ 1; a
        (n, dim) matrix gives each memory one vector. A memory whose text is already stored for the
        same user/conversation (or earlier in this batch) is not stored again; its result carries
        the existing id and ``duplicate=True``.
        """
        windows = _windows(vectors, len(memories), model.dim)
        results: list[AddResult] = []
        with self.writing(model) as (index, _):
            created_at = utc_now_iso()
            for memory, rows in zip(memories, windows, strict=True):
                blobs = [row.astype("<f4").tobytes() for row in rows]
                memory_id = self.records.insert(memory, blobs, created_at)
                if memory_id is None:
                    results.append(AddResult(id=self.find_duplicate(memory) or -1, duplicate=True))
                    continue
                results.append(AddResult(id=memory_id, duplicate=False))
                index.add([vid for vid, _ in self.records.vectors_of_memories([memory_id])[memory_id]], rows)
        return results

    def edit(self, memory_id: int, text: str, vectors: FloatArray, model: ModelStamp) -> Memory:
        """Replace a memory's text and vector(s), keeping its id and created_at; records updated_at.

        Raises InvalidInputError if there is no such memory or the same user/conversation already
        holds that text in another memory.
        """
        (rows,) = _windows([vectors], 1, model.dim)
        with self.writing(model) as (index, _):
            old = [vid for vid, _ in self.records.vectors_of_memories([memory_id]).get(memory_id, [])]
            blobs = [row.astype("<f4").tobytes() for row in rows]
            try:
                found = self.records.replace_text(memory_id, text, blobs, utc_now_iso())
            except sqlite3.IntegrityError:
                raise InvalidInputError(
                    "another memory of the same user/conversation already holds this text"
                ) from None
            if not found:
                raise InvalidInputError(f"there is no memory {memory_id}")
            index.remove(old)
            index.add([vid for vid, _ in self.records.vectors_of_memories([memory_id])[memory_id]], rows)
        return self.records.get_many([memory_id])[memory_id]

    def forget(self, memory_ids: Sequence[int]) -> list[int]:
        """Delete memories (texts, tags, terms, vectors); returns the ids that existed."""
        model = self.model
        with self.writing(model) as (index, _):
            vectors = self.records.vectors_of_memories(memory_ids)
            deleted = self.records.delete(memory_ids)
            if index is not None:
                index.remove([vid for mid in deleted for vid, _ in vectors.get(mid, [])])
        return deleted

    @contextlib.contextmanager
    def writing(self, model: ModelStamp | None) -> Iterator[tuple[VectorIndex, Records]]:
        """A write transaction under the store lock, with the synced index to update alongside.

        On success the transaction commits with a new generation and the index is saved; on error
        both are left as they were.
        """
        with self.write_lock():
            if model is not None:
                self.check_model(model)
            index = self.vector_index(model.dim) if model is not None else None
            conn = self.records.conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                if model is not None and self.model is None:
                    self.record_model(model)
                yield index, self.records  # type: ignore[misc]
                generation = self.records.bump_generation()
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            if index is not None:
                index.save(self.index_path, generation)

    def search(
        self,
        text: str,
        vector: FloatArray | None,
        k: int,
        filters: Filters,
        *,
        mode: SearchMode = SearchMode.VECTOR,
        min_score: float | None = None,
        embedded_with: ModelStamp | None = None,
    ) -> SearchOutcome:
        """The top ``k`` memories the filters select for a query, best first (see ``search``).

        ``vector`` (the embedded query) is needed unless ``mode`` is keyword. With ``embedded_with``,
        raises ModelChangedError if the store no longer uses that model (a re-embed was swapped in).
        """
        index = None
        if mode is not SearchMode.KEYWORD:
            model = self.model
            if model is None:
                return SearchOutcome([], 0, None)
            if embedded_with is not None and embedded_with != model:
                raise ModelChangedError(
                    f"the store at {self.directory} switched to model {model.name}; retry"
                )
            index = self.vector_index(model.dim, persist_repairs=True)
        return run_search(self.records, index, text, vector, k, filters, mode, min_score)

    def newest(self, filters: Filters, limit: int) -> list[Memory]:
        """Up to ``limit`` memories the filters select, newest first."""
        return self.records.newest(filters, limit)

    def iter_all(self, filters: Filters | None = None) -> Iterator[Memory]:
        """Every memory (the filters select), in id order."""
        return self.records.iter_all(filters)

    def vector_index(self, dim: int, *, persist_repairs: bool = False) -> VectorIndex:
        """The index, level with SQLite; repairs are saved when asked and no writer holds the lock."""
        from remem.index import sync  # noqa: PLC0415 - numpy and FAISS only when vectors are needed

        settings = self.settings
        synced = sync.synced_index(self.records, self.index_path, dim, settings.built_kind, settings.hnsw)
        if synced.warning:
            self.warnings.append(synced.warning)
        if persist_repairs and synced.changed:
            with contextlib.suppress(BlockingIOError, StoreError), self.write_lock(blocking=False):
                synced.index.save(self.index_path, synced.index.header.generation)
        return synced.index

    def write_lock(self, *, blocking: bool = True) -> contextlib.AbstractContextManager[None]:
        """The store's exclusive writer lock (an OS file lock; BlockingIOError if not ``blocking``
        and it is held). Taking it removes temporary files a killed writer left behind."""
        return _locked(self.directory, blocking=blocking)


def _windows(vectors: Sequence[FloatArray] | FloatArray, count: int, dim: int) -> list[FloatArray]:
    """Each memory's vectors as a (w, dim) matrix with w ≥ 1; StoreError on a wrong shape."""
    if len(vectors) != count:
        raise StoreError(f"got vectors for {len(vectors)} memories, expected {count}")
    shaped = []
    for item in vectors:
        if item.size == 0 or item.size % dim or item.ndim > 2 or (item.ndim == 2 and item.shape[1] != dim):
            raise StoreError(f"vectors of shape {item.shape} do not fit a {dim}-d model")
        shaped.append(item.reshape(-1, dim))
    return shaped


@contextlib.contextmanager
def _locked(directory: Path, *, blocking: bool = True) -> Iterator[None]:
    try:
        fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StoreError(f"cannot lock {directory}: {exc.strerror or exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        for leftover in directory.glob(".*.tmp"):  # from a writer that was killed mid-save
            with contextlib.suppress(OSError):
                leftover.unlink()
        yield
    finally:
        os.close(fd)
