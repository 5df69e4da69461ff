"""The FAISS inner-product index over unit vectors, keyed by memory id, with atomic saves."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from remem.atomic import atomic_writer
from remem.errors import StoreError

FloatArray = npt.NDArray[np.float32]
IdArray = npt.NDArray[np.int64]


class IndexFileError(StoreError):
    """The index file is missing, unreadable or not a remem vector index."""


def _faiss() -> Any:
    import faiss  # noqa: PLC0415 - lazy: heavy import, never needed by list/export

    return faiss


class VectorIndex:
    """An exact ``IndexIDMap2(IndexFlatIP)``: scores are raw cosine for unit vectors."""

    def __init__(self, index: Any) -> None:
        """Wrap a FAISS index object (use ``empty`` or ``load`` to make one)."""
        self._index = index

    @classmethod
    def empty(cls, dim: int) -> VectorIndex:
        """A new, empty exact index of dimension ``dim``."""
        faiss = _faiss()
        return cls(faiss.IndexIDMap2(faiss.IndexFlatIP(dim)))

    @classmethod
    def load(cls, path: Path, dim: int) -> VectorIndex:
        """Read an index file; IndexFileError if it is missing, damaged or of another dimension."""
        faiss = _faiss()
        try:
            data = np.fromfile(path, dtype=np.uint8)
        except (FileNotFoundError, OSError) as exc:
            raise IndexFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
        try:
            index = faiss.deserialize_index(data)
        except Exception as exc:  # faiss raises RuntimeError with C++ text
            raise IndexFileError(f"{path} is damaged ({str(exc).splitlines()[0][:120]})") from exc
        if index.d != dim or not isinstance(index, faiss.IndexIDMap2):
            raise IndexFileError(f"{path} is not a {dim}-d remem index")
        return cls(index)

    @property
    def size(self) -> int:
        """Number of vectors in the index."""
        return int(self._index.ntotal)

    def ids(self) -> IdArray:
        """Ids of all vectors in the index, in insertion order."""
        return np.asarray(_faiss().vector_to_array(self._index.id_map), dtype=np.int64)

    def add(self, ids: Sequence[int] | IdArray, vectors: FloatArray) -> None:
        """Add unit vectors (rows) under the given ids."""
        if len(ids):
            self._index.add_with_ids(
                np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64)
            )

    def search(
        self, query: FloatArray, k: int, among: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` highest inner products for one query as (id, score), best first.

        With ``among``, only those ids are candidates; the result is still the exact top ``k``.
        """
        limit = min(k, self.size if among is None else len(among))
        if limit <= 0:
            return []
        faiss = _faiss()
        params = None
        if among is not None:
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(np.asarray(among, dtype=np.int64)))
        scores, labels = self._index.search(
            np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32), limit, params=params
        )
        return [(int(i), float(s)) for i, s in zip(labels[0], scores[0], strict=True) if i >= 0]

    def save(self, path: Path) -> None:
        """Write the index atomically (temp file, fsync, rename) with mode 0600."""
        data = _faiss().serialize_index(self._index)
        try:
            with atomic_writer(path) as handle:
                handle.write(data.tobytes())
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from exc
