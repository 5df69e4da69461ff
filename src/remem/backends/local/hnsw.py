"""The HNSW graph in FAISS (an IndexIDMap2 over an inner-product IndexHNSWFlat): approximate search.

The only place remem imports FAISS; exact stores never load it (see ``flat``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from remem.arrays import FloatArray
from remem.backends.local.flat import IdArray
from remem.backends.local.kinds import HnswParams
from remem.backends.local.mapped import ByteArray


def _faiss() -> Any:
    import faiss  # noqa: PLC0415 - lazy: heavy import, needed only by HNSW stores

    return faiss


class HnswGraph:
    """Vectors keyed by id in an HNSW graph. Deletion is the caller's (tombstones): see ``exclude``."""

    def __init__(self, index: Any, mapped: ByteArray | None = None) -> None:
        """Wrap a FAISS IndexIDMap2 over an IndexHNSWFlat (use ``empty``, ``read`` or ``mapped``);
        ``mapped``: the bytes FAISS's arrays are views of, kept alive with it."""
        self._index = index
        self._mapped = mapped

    @classmethod
    def empty(cls, dim: int, params: HnswParams) -> HnswGraph:
        """A new graph with no vectors."""
        faiss = _faiss()
        inner = faiss.IndexHNSWFlat(dim, params.m, faiss.METRIC_INNER_PRODUCT)
        inner.hnsw.efConstruction = params.ef_construction
        inner.hnsw.efSearch = params.ef_search
        return cls(faiss.IndexIDMap2(inner))  # faiss's Python wrapper keeps ``inner`` alive

    @classmethod
    def read(cls, read: Callable[[int], bytes], dim: int) -> HnswGraph:
        """Read FAISS's bytes from ``read``; ValueError unless they are a ``dim``-d id-mapped index.

        FAISS's own parse errors are RuntimeError."""
        faiss = _faiss()
        return cls(_checked(faiss.read_index(faiss.PyCallbackIOReader(read)), dim))

    @classmethod
    def mapped(cls, data: ByteArray, dim: int) -> HnswGraph:
        """The graph in FAISS's bytes ``data`` (a mapped file: see ``mapped``), its vectors and lists
        read in place, not copied (FAISS ≥ 1.11; an older FAISS reads a copy). ValueError or FAISS's
        RuntimeError as ``read``. Changing the graph first copies it (``add``)."""
        faiss = _faiss()
        if not hasattr(faiss, "ZeroCopyIOReader"):
            return cls.read(_reader(data), dim)
        reader = faiss.ZeroCopyIOReader(faiss.swig_ptr(data), len(data))
        return cls(_checked(faiss.read_index(reader, faiss.IO_FLAG_MMAP_IFC), dim), data)

    def _own(self) -> None:
        """Copy a graph read in place into memory of its own, so that FAISS can change it."""
        if self._mapped is not None:
            faiss = _faiss()
            self._index, self._mapped = (
                faiss.read_index(faiss.PyCallbackIOReader(_reader(self._mapped))),
                None,
            )

    def write(self, write: Callable[[bytes], int]) -> None:
        """Write FAISS's bytes of the graph to ``write``."""
        faiss = _faiss()
        faiss.write_index(self._index, faiss.PyCallbackIOWriter(write))

    @property
    def dim(self) -> int:
        """Dimensions of the vectors."""
        return int(self._index.d)

    @property
    def size(self) -> int:
        """Vectors in the graph."""
        return int(self._index.ntotal)

    def ids(self) -> IdArray:
        """Ids of all vectors, in insertion order."""
        return np.asarray(_faiss().vector_to_array(self._index.id_map), dtype=np.int64)

    def add(self, ids: Sequence[int] | IdArray, vectors: FloatArray) -> None:
        """Add rows under the given ids."""
        self._own()
        self._index.add_with_ids(
            np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64)
        )

    def search(
        self, query: FloatArray, k: int, among: Sequence[int] | None, exclude: Sequence[int], ef_search: int
    ) -> list[tuple[int, float]]:
        """Up to ``k`` (id, score) found by a walk of beam ``ef_search``, best first: only ids in
        ``among`` (when given), never ids in ``exclude``."""
        faiss = _faiss()
        keep: list[Any] = []  # FAISS selectors must outlive the search call
        if among is not None:
            keep.append(faiss.IDSelectorBatch(np.asarray(among, dtype=np.int64)))
        elif len(exclude):
            keep.append(faiss.IDSelectorBatch(np.asarray(exclude, dtype=np.int64)))
            keep.append(faiss.IDSelectorNot(keep[-1]))
        params = faiss.SearchParametersHNSW()
        params.efSearch = max(ef_search, k)
        if keep:
            params.sel = keep[-1]
        with threads(1):  # waking OpenMP workers costs a query more than they save (retired bench/index.py)
            scores, labels = self._index.search(
                np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32), k, params=params
            )
        return [(int(i), float(s)) for i, s in zip(labels[0], scores[0], strict=True) if i >= 0]

    def vectors(self, ids: Sequence[int]) -> FloatArray:
        """The rows of these ids, in the given order; KeyError if one is absent."""
        try:
            matrix = self._index.reconstruct_batch(np.asarray(ids, dtype=np.int64))
        except RuntimeError as exc:  # FAISS: "key not found"
            raise KeyError(str(exc).splitlines()[0]) from exc
        rows: FloatArray = np.asarray(matrix, dtype=np.float32)
        return rows


def inner_products(rows: FloatArray, vector: FloatArray, out: FloatArray) -> None:
    """``out = rows @ vector`` on this thread, in FAISS's SIMD loop: the vectors added since the
    graph was saved are scored so on every search, and BLAS's gemv hands 2,000 of them to
    OpenBLAS's threads, whose wake-up and spinning cost a loaded machine more than the product
    (100k HNSW, 2,000 behind, 2 busy cores: the scan's p50 9-14 ms against 0.8 ms, the walk beside it
    12-15 ms against 7 ms)."""
    faiss = _faiss()
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    vector = np.ascontiguousarray(vector, dtype=np.float32)
    faiss.fvec_inner_products_ny(
        faiss.swig_ptr(out), faiss.swig_ptr(vector), faiss.swig_ptr(rows), len(vector), len(rows)
    )


def _checked(index: Any, dim: int) -> Any:
    """``index`` if it is a ``dim``-d IndexIDMap2; else ValueError."""
    if index.d != dim or not isinstance(index, _faiss().IndexIDMap2):
        raise ValueError(f"not a {dim}-d id-mapped index")
    return index


def _reader(data: ByteArray) -> Callable[[int], bytes]:
    """``read(size)`` over ``data``, from its start: copies of the next ``size`` bytes."""
    position = 0

    def read(size: int) -> bytes:
        nonlocal position
        piece = data[position : position + size].tobytes()
        position += len(piece)
        return piece

    return read


@contextlib.contextmanager
def threads(count: int | None) -> Iterator[None]:
    """FAISS's work started on this thread meanwhile runs on at most ``count`` threads (OpenMP's
    setting is the calling thread's own: other threads keep theirs); None: as many as it likes."""
    if count is None:
        yield
        return
    faiss = _faiss()
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(count)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)
