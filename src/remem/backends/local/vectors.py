"""The FAISS index over unit vectors, keyed by vector id: exact or HNSW, with tombstones and a header.

The index file is ``REMEM-VECTORS 2\\n``, one JSON header line (generation, kind, dim, HNSW parameters,
tombstones), the FAISS index bytes, and ``sha256 HEX\\n`` of those bytes (a damaged block is caught on
load, and the file rebuilt, instead of giving wrong cosines). It is always replaced atomically.
Scores are inner products, which are raw cosines for unit vectors.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.arrays import FloatArray
from remem.atomic import atomic_writer
from remem.backends.local.kinds import HnswParams, IndexKind
from remem.backends.local.vectors_header import CHECKSUM_PREFIX, MAGIC, MAGIC_V1
from remem.errors import StoreError

IdArray = npt.NDArray[np.int64]


class IndexFileError(StoreError):
    """The index file is missing, unreadable or not a remem vector index of the expected shape."""


@dataclass
class IndexHeader:
    """What the index file says about itself."""

    generation: int
    kind: IndexKind
    dim: int
    hnsw: HnswParams = field(default_factory=HnswParams)
    store_id: str = ""
    tombstones: list[int] = field(default_factory=list)


def _faiss() -> Any:
    import faiss  # noqa: PLC0415 - lazy: heavy import, never needed by list/export

    return faiss


class VectorIndex:
    """Vectors keyed by id. Tombstoned ids stay in an HNSW graph but are never returned."""

    def __init__(self, index: Any, header: IndexHeader) -> None:
        """Wrap a FAISS index and its header (use ``empty`` or ``load``)."""
        self._index = index
        self.header = header
        self._tombstones = set(header.tombstones)

    @classmethod
    def empty(
        cls, dim: int, kind: IndexKind = IndexKind.EXACT, hnsw: HnswParams | None = None, generation: int = 0
    ) -> VectorIndex:
        """A new, empty index."""
        faiss, params = _faiss(), hnsw or HnswParams()
        if kind is IndexKind.HNSW:
            inner = faiss.IndexHNSWFlat(dim, params.m, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efConstruction = params.ef_construction
            inner.hnsw.efSearch = params.ef_search
        else:
            inner = faiss.IndexFlatIP(dim)
        index = faiss.IndexIDMap2(inner)  # faiss's Python wrapper keeps ``inner`` alive
        return cls(index, IndexHeader(generation=generation, kind=kind, dim=dim, hnsw=params))

    @classmethod
    def load(cls, path: Path, dim: int) -> VectorIndex:
        """Read an index file; IndexFileError if it is missing, damaged or not ``dim``-dimensional."""
        faiss = _faiss()
        try:
            with path.open("rb") as handle:
                magic = handle.read(len(MAGIC))
                if magic not in (MAGIC, MAGIC_V1):
                    raise IndexFileError(f"{path} is not a remem vector index")
                header = _parse_header(handle.readline())
                digest = hashlib.sha256()
                index = faiss.read_index(faiss.PyCallbackIOReader(_hashed_reader(handle.read, digest)))
                if magic == MAGIC and handle.read() != _checksum_line(digest.hexdigest()):
                    raise IndexFileError(f"{path} is damaged (its checksum does not match)")
        except OSError as exc:
            raise IndexFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
        except (RuntimeError, ValueError, KeyError, TypeError) as exc:
            raise IndexFileError(f"{path} is damaged ({str(exc).splitlines()[0][:120]})") from exc
        if header.dim != dim or index.d != dim or not isinstance(index, faiss.IndexIDMap2):
            raise IndexFileError(f"{path} is not a {dim}-d remem index")
        return cls(index, header)

    @property
    def kind(self) -> IndexKind:
        """Exact or HNSW."""
        return self.header.kind

    @property
    def size(self) -> int:
        """Vectors in the index, tombstoned ones included."""
        return int(self._index.ntotal)

    @property
    def tombstones(self) -> frozenset[int]:
        """Ids that are in the graph but deleted (HNSW only; an exact index removes them)."""
        return frozenset(self._tombstones)

    def ids(self) -> IdArray:
        """Ids of all vectors in the index (tombstoned ones included), in insertion order."""
        return np.asarray(_faiss().vector_to_array(self._index.id_map), dtype=np.int64)

    def add(self, ids: Sequence[int] | IdArray, vectors: FloatArray) -> None:
        """Add unit vectors (rows) under the given ids."""
        if len(ids):
            self._index.add_with_ids(
                np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64)
            )

    def remove(self, ids: Sequence[int]) -> None:
        """Stop returning these ids: removed from an exact index, tombstoned in HNSW."""
        if not len(ids):
            return
        if self.kind is IndexKind.HNSW:
            self._tombstones.update(int(i) for i in ids)
        else:
            self._index.remove_ids(_faiss().IDSelectorBatch(np.asarray(ids, dtype=np.int64)))

    def search(
        self, query: FloatArray, k: int, among: Sequence[int] | None = None, ef_search: int | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` highest inner products for one query as (id, score), best first.

        With ``among``, only those ids are candidates. Tombstoned ids are never returned. Exact
        indexes return the true top ``k``; HNSW may return fewer or miss some (approximate).
        """
        limit = min(k, self.size if among is None else len(among))
        if limit <= 0:
            return []
        faiss = _faiss()
        keep: list[Any] = []  # FAISS selectors must outlive the search call
        if among is not None:
            keep.append(faiss.IDSelectorBatch(np.asarray(among, dtype=np.int64)))
        elif self._tombstones:
            keep.append(faiss.IDSelectorBatch(np.fromiter(self._tombstones, dtype=np.int64)))
            keep.append(faiss.IDSelectorNot(keep[-1]))
        params = faiss.SearchParametersHNSW() if self.kind is IndexKind.HNSW else faiss.SearchParameters()
        if self.kind is IndexKind.HNSW:
            params.efSearch = max(ef_search or self.header.hnsw.ef_search, limit)
        if keep:
            params.sel = keep[-1]
        with _one_thread(faiss):
            scores, labels = self._index.search(
                np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32), limit, params=params
            )
        return [(int(i), float(s)) for i, s in zip(labels[0], scores[0], strict=True) if i >= 0]

    def vectors(self, ids: Sequence[int]) -> FloatArray:
        """The stored vectors of these ids (rows in the given order); KeyError if one is absent."""
        if not len(ids):
            return np.zeros((0, self.header.dim), dtype=np.float32)
        try:
            matrix = self._index.reconstruct_batch(np.asarray(ids, dtype=np.int64))
        except RuntimeError as exc:  # FAISS: "key not found"
            raise KeyError(str(exc).splitlines()[0]) from exc
        rows: FloatArray = np.asarray(matrix, dtype=np.float32)
        return rows

    def save(self, path: Path, generation: int | None = None) -> None:
        """Write the index atomically (temp file, fsync, rename; mode 0600), recording ``generation``
        (default: the one it already has)."""
        if generation is not None:
            self.header.generation = generation
        self.header.tombstones = sorted(self._tombstones)
        faiss = _faiss()
        try:
            with atomic_writer(path) as handle:
                handle.write(MAGIC)
                handle.write(_format_header(self.header))
                digest = hashlib.sha256()
                faiss.write_index(self._index, faiss.PyCallbackIOWriter(_hashed_writer(handle.write, digest)))
                handle.write(_checksum_line(digest.hexdigest()))
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from exc


@contextlib.contextmanager
def _one_thread(faiss: Any) -> Iterator[None]:
    """Run one query on one thread: waking OpenMP workers costs more than they save (bench/index.py)."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def _hashed_reader(read: Callable[[int], bytes], digest: Any) -> Callable[[int], bytes]:
    """``read`` that also feeds what it returns to ``digest``."""

    def reading(size: int) -> bytes:
        data = read(size)
        digest.update(data)
        return data

    return reading


def _hashed_writer(write: Callable[[bytes], int], digest: Any) -> Callable[[bytes], int]:
    """``write`` that also feeds what it is given to ``digest``."""

    def writing(data: bytes) -> int:
        digest.update(data)
        return write(data)

    return writing


def _checksum_line(hexdigest: str) -> bytes:
    return CHECKSUM_PREFIX + hexdigest.encode() + b"\n"


def _format_header(header: IndexHeader) -> bytes:
    record = asdict(header)
    record["kind"] = header.kind.value
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"


def _parse_header(line: bytes) -> IndexHeader:
    record = json.loads(line)
    return IndexHeader(
        generation=int(record["generation"]),
        kind=IndexKind(record["kind"]),
        dim=int(record["dim"]),
        hnsw=HnswParams(**record["hnsw"]),
        tombstones=[int(i) for i in record["tombstones"]],
        store_id=str(record["store_id"]),
    )
