"""The store: keeps SQLite records and the FAISS index consistent, under one directory."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from remem.errors import ModelMismatchError, StoreError
from remem.index.records import (
    Filters,
    Memory,
    ModelStamp,
    NewMemory,
    Records,
    connect,
    text_sha256,
    utc_now_iso,
)
from remem.index.search import Hit, SearchMode, rank

if TYPE_CHECKING:
    from remem.index.vectors import FloatArray, VectorIndex

DB_FILE = "memories.sqlite3"
INDEX_FILE = "vectors.faiss"
LOCK_FILE = "write.lock"
_MODEL_KEYS = ("model_name", "model_dim", "model_pooling", "model_sha256")


class StoreNotFoundError(StoreError):
    """No store exists at the directory a read-only command was pointed at."""


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
    """A memory store in one directory. SQLite is the truth; the vector index is rebuilt from it."""

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
    def model(self) -> ModelStamp | None:
        """The model whose vectors this store holds, or None if it holds none yet."""
        name, dim, pooling, sha = (self.records.get_meta(key) for key in _MODEL_KEYS)
        if name is None or dim is None or pooling is None or sha is None:
            return None
        return ModelStamp(name=name, dim=int(dim), pooling=pooling, sha256=sha)

    def check_model(self, model: ModelStamp) -> None:
        """Raise ModelMismatchError unless the store is empty of vectors or was made by ``model``."""
        recorded = self.model
        if recorded is not None and recorded != model:
            raise ModelMismatchError(
                f"the store at {self.directory} holds vectors of model {recorded.name} "
                f"({recorded.dim}-d, {recorded.pooling} pooling, sha256 {recorded.sha256[:12]}…); "
                f"refusing to mix in {model.name} ({model.dim}-d, {model.pooling} pooling, "
                f"sha256 {model.sha256[:12]}…)"
            )

    def find_duplicate(self, memory: NewMemory) -> int | None:
        """The id of an identical text already stored for the same user and conversation."""
        return self.records.find_duplicate(text_sha256(memory.text), memory.user, memory.conversation)

    def add(self, memory: NewMemory, vector: FloatArray, model: ModelStamp) -> AddResult:
        """Store one memory with its unit vector (see ``add_many``)."""
        return self.add_many([memory], vector.reshape(1, -1), model)[0]

    def add_many(
        self, memories: Sequence[NewMemory], vectors: FloatArray, model: ModelStamp
    ) -> list[AddResult]:
        """Store memories with their unit vectors (row i for memory i) in one transaction.

        A memory whose text is already stored for the same user/conversation (or earlier in this
        batch) is not stored again; its result carries the existing id and ``duplicate=True``.
        The rows are committed to SQLite first, then the index file is rewritten once, all under
        the store's write lock; a crash in between loses nothing (the index catches up on open).
        """
        if vectors.shape != (len(memories), model.dim):
            raise StoreError(f"vectors have shape {vectors.shape}, expected ({len(memories)}, {model.dim})")
        blobs = [row.tobytes() for row in vectors.astype("<f4")]
        with self._write_lock():
            self.check_model(model)
            index = self._load_index(model.dim)  # level with SQLite before this batch
            results = self._insert(memories, blobs, model)
            if any(not result.duplicate for result in results):
                index, _ = self._catch_up(index, model.dim)  # appends the new rows
                index.save(self.index_path)
        return results

    def _insert(
        self, memories: Sequence[NewMemory], blobs: list[bytes], model: ModelStamp
    ) -> list[AddResult]:
        conn = self.records.conn
        results = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self.check_model(model)
                if self.model is None:
                    values = (model.name, model.dim, model.pooling, model.sha256)
                    for key, value in zip(_MODEL_KEYS, values, strict=True):
                        self.records.set_meta(key, str(value))
                created_at = utc_now_iso()
                for memory, blob in zip(memories, blobs, strict=True):
                    memory_id = self.records.insert(memory, blob, created_at)
                    if memory_id is None:
                        results.append(AddResult(id=self.find_duplicate(memory) or -1, duplicate=True))
                    else:
                        results.append(AddResult(id=memory_id, duplicate=False))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to {self.directory / DB_FILE}: {exc}") from exc
        return results

    def search(
        self,
        text: str,
        vector: FloatArray | None,
        k: int,
        filters: Filters,
        *,
        mode: SearchMode = SearchMode.VECTOR,
        min_score: float | None = None,
    ) -> list[Hit]:
        """The top ``k`` memories the filters select for a query, best first (see ``search.rank``).

        ``vector`` (the embedded query) is needed unless ``mode`` is keyword. With ``min_score``, hits
        whose cosine is below it are left out (not available in keyword mode). [] for an empty store.
        """
        if min_score is not None and mode is SearchMode.KEYWORD:
            raise ValueError("min_score is a cosine; keyword search has none")
        index = None
        if mode is not SearchMode.KEYWORD:
            model = self.model
            if model is None:
                return []
            index = self._load_index(model.dim, persist_repairs=True)
        ranked = rank(self.records, index, text, vector, k, filters, mode)
        if min_score is not None:
            ranked = [r for r in ranked if r.vector is not None and r.vector.score >= min_score]
        ranked = ranked[:k]
        memories = self.records.get_many([r.id for r in ranked])
        return [Hit(memories[r.id], r.score, r.vector, r.keyword) for r in ranked if r.id in memories]

    def newest(self, filters: Filters, limit: int) -> list[Memory]:
        """Up to ``limit`` memories the filters select, newest first."""
        return self.records.newest(filters, limit)

    def iter_all(self, filters: Filters | None = None) -> Iterator[Memory]:
        """Every memory (the filters select), in id order."""
        return self.records.iter_all(filters)

    def _load_index(self, dim: int, *, persist_repairs: bool = False) -> VectorIndex:
        """The index file, repaired in memory to match SQLite (and saved if asked and unlocked)."""
        from remem.index.vectors import IndexFileError, VectorIndex  # noqa: PLC0415 - lazy faiss

        damaged = False
        try:
            index = VectorIndex.load(self.index_path, dim)
        except IndexFileError as exc:
            damaged = self.index_path.exists() or self.records.count_and_max_id()[0] > 0
            if damaged:
                self.warnings.append(f"{exc}; rebuilt it from {self.directory / DB_FILE}")
            index = VectorIndex.empty(dim)
        index, changed = self._catch_up(index, dim)
        if persist_repairs and (changed or damaged):
            self._save_if_unlocked(index)
        return index

    def _catch_up(self, index: VectorIndex, dim: int) -> tuple[VectorIndex, bool]:
        """Bring ``index`` level with SQLite: append newer rows, or rebuild if it disagrees."""
        import numpy as np  # noqa: PLC0415 - only the vector paths need numpy

        from remem.index.vectors import VectorIndex  # noqa: PLC0415 - lazy faiss

        ids = index.ids()
        indexed_max = int(ids.max()) if len(ids) else -1
        if (len(ids), indexed_max) == self.records.count_and_max_id():
            return index, False
        if self.records.count_and_max_id(up_to_id=indexed_max)[0] != len(ids):
            self.warnings.append(f"{self.index_path} disagreed with the database; rebuilt it")
            index, indexed_max = VectorIndex.empty(dim), -1
        for chunk in self.records.iter_vectors(after_id=indexed_max):
            blobs = b"".join(blob for _, blob in chunk)
            index.add([mid for mid, _ in chunk], np.frombuffer(blobs, dtype="<f4").reshape(len(chunk), dim))
        return index, True

    def _save_if_unlocked(self, index: VectorIndex) -> None:
        with contextlib.suppress(BlockingIOError, StoreError), self._write_lock(blocking=False):
            index.save(self.index_path)

    @contextlib.contextmanager
    def _write_lock(self, *, blocking: bool = True) -> Iterator[None]:
        try:
            fd = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot lock {self.directory}: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            yield
        finally:
            os.close(fd)
