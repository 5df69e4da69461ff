"""The exact index in numpy: every vector scored, stored in FAISS's own file layout.

An exact store needs nothing from FAISS but its file format, and importing FAISS costs a cold
`remem search` more than the search itself (bench/cold_start.py). The bytes read and written here
are those of ``faiss.write_index(IndexIDMap2(IndexFlatIP(d)))`` (checked both ways in
tests/unit/test_flat_index.py), so index files move freely between remem versions, whichever wrote
them, and FAISS tools can read them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

from remem.arrays import FloatArray

IdArray = npt.NDArray[np.int64]
#: ``product(rows, vector, out)`` sets ``out`` to ``rows @ vector`` (float32, contiguous).
Product = Callable[[FloatArray, FloatArray, FloatArray], object]

# FAISS's index header: d (int32), ntotal (int64), two unused int64, is_trained (bool),
# metric (int32; 0 is inner product). Each index starts with a four-byte type tag.
_HEADER = struct.Struct("<iqqq?i")
_COUNT = struct.Struct("<Q")
_UNUSED = 1 << 20
_ID_MAP, _FLAT_IP = b"IxM2", b"IxFI"
#: Where the vectors start in the bytes: two index headers, each after its tag, then the float count.
ROWS_OFFSET = 2 * (4 + _HEADER.size) + _COUNT.size
#: Rows a scan of a mapped matrix reads between two releases of pages: 16,384 × 384 float32 is 24 MB.
SCAN_ROWS = 16_384


class FlatFormatError(ValueError):
    """The bytes are not an id-mapped exact inner-product FAISS index."""


class FlatIndex:
    """Unit vectors keyed by id, kept in insertion order; search scores all of them.

    The rows are a *base* read in place (a mapped file, never written) followed by a *tail* of the
    rows added since (memory of its own, with room to grow): adding to a mapped million copies
    nothing (it copied 1.5 GB before), and saving streams the base from the file."""

    def __init__(
        self,
        dim: int,
        ids: IdArray,
        base: FloatArray,
        release: Callable[[int, int], None] | None = None,
        product: Product | None = None,
    ) -> None:
        """Wrap ``ids`` and their rows in ``base`` (use ``empty`` or ``from_bytes``); ``product``
        scores rows (default: BLAS, whose threads a big scan uses)."""
        self.dim = dim
        self._product = product or _blas_product
        self._ids = ids
        # Whole SCAN_ROWS pieces of ``base`` stay in place; the rows past the last whole piece start
        # the tail (a copy of at most SCAN_ROWS rows), so that every row is scored in the same piece
        # of the same size however the rows are split between file and memory (``_scan``).
        whole = len(base) // SCAN_ROWS * SCAN_ROWS
        self._base = base[:whole]  # rows [0, whole); when mapped, ``release(a, b)`` after reading [a, b)
        self._tail = np.array(base[whole:], dtype=np.float32)  # rows past it; room beyond ``size``
        self.size = len(ids)
        self._sorted: tuple[IdArray, IdArray] | None = None  # (ids sorted, their rows), when needed
        self.changes = 0  #: how many times vectors were added or removed (rows move when they are)
        self._release = release
        self._dead: npt.NDArray[np.bool_] | None = None  # rows removed since: skipped, never moved

    @classmethod
    def empty(cls, dim: int, product: Product | None = None) -> FlatIndex:
        """A new index with no vectors (``product``: as the constructor's)."""
        return cls(dim, np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32), product=product)

    @classmethod
    def from_bytes(
        cls, data: bytes | memoryview, release: Callable[[int, int], None] | None = None
    ) -> FlatIndex:
        """Parse FAISS's bytes of an IndexIDMap2 over an IndexFlatIP; FlatFormatError otherwise.

        The arrays are views of ``data`` (read only, no copy) until the index is first changed; give
        ``data`` whose byte ``ROWS_OFFSET`` is aligned to at least 4 (``aligned_buffer``): numpy
        multiplies unaligned float32 rows without BLAS, 12× slower (28 vs 2.3 ms for 10k × 384).
        With ``release``, scans over every vector go ``SCAN_ROWS`` rows at a time and call
        ``release(first row, end row)`` after each (``data`` is a mapped file: see ``mapped``)."""
        view = memoryview(data)
        dim, count = _read_header(view, 0, _ID_MAP)
        if _read_header(view, 4 + _HEADER.size, _FLAT_IP) != (dim, count):
            raise FlatFormatError("the inner index does not match its id map")
        offset = 2 * (4 + _HEADER.size)
        floats = _read_count(view, offset)
        if floats != dim * count or len(view) != offset + 8 + 4 * floats + 8 + 8 * count:
            raise FlatFormatError(f"{len(view)} bytes do not hold {count} vectors of {dim} and their ids")
        matrix = np.frombuffer(view, dtype="<f4", count=floats, offset=offset + 8).reshape(count, dim)
        offset += 8 + 4 * floats
        if _read_count(view, offset) != count:
            raise FlatFormatError("the id map does not match the vectors")
        ids = np.frombuffer(view, dtype="<i8", count=count, offset=offset + 8)
        return cls(dim, ids, matrix, release)

    @property
    def aligned(self) -> bool:
        """True when the vectors are aligned for BLAS (see ``from_bytes``)."""
        return bool(self._base.flags.aligned)

    def to_bytes(self) -> Iterator[bytes | memoryview]:
        """The index in FAISS's layout, in pieces (the vectors are not copied; a mapped base is read
        ``SCAN_ROWS`` at a time, its pages let go after each piece is taken)."""
        live = self._live()
        return layout(self.dim, self._ids if live is None else self._ids[live], self._row_pieces(live))

    def _row_pieces(self, live: npt.NDArray[np.bool_] | None) -> Iterator[bytes | memoryview]:
        """The live rows' float32 bytes in order: the base ``SCAN_ROWS`` at a time, then the tail."""
        base = len(self._base)
        for start in range(0, base, SCAN_ROWS):
            stop = min(base, start + SCAN_ROWS)
            rows = self._base[start:stop] if live is None else self._base[start:stop][live[start:stop]]
            yield np.ascontiguousarray(rows, dtype="<f4").data.cast("B")
            if self._release is not None:
                self._release(start, stop)
        if self.size > base:
            rows = (
                self._tail[: self.size - base]
                if live is None
                else self._tail[: self.size - base][live[base:]]
            )
            yield np.ascontiguousarray(rows, dtype="<f4").data.cast("B")

    def _live(self) -> npt.NDArray[np.bool_] | None:
        """Which rows are not removed, or None when all are."""
        return None if self._dead is None else ~self._dead

    @property
    def removed(self) -> int:
        """Rows removed since the index was read (still in it, never returned)."""
        return 0 if self._dead is None else int(np.count_nonzero(self._dead))

    def ids(self) -> IdArray:
        """Ids of all vectors not removed, in insertion order."""
        live = self._live()
        return np.array(self._ids if live is None else self._ids[live], dtype=np.int64)

    def add(self, ids: Sequence[int] | IdArray, vectors: FloatArray) -> None:
        """Append rows under the given ids (room grows geometrically: many small adds stay linear)."""
        rows = np.asarray(vectors, dtype=np.float32).reshape(len(ids), self.dim)
        used = self.size - len(self._base)
        needed = used + len(ids)
        if needed > len(self._tail):
            grown = np.empty((max(needed, 2 * len(self._tail), 64), self.dim), dtype=np.float32)
            grown[:used] = self._tail[:used]
            self._tail = grown
        self._tail[used:needed] = rows
        self._ids = np.concatenate([self._ids, np.asarray(ids, dtype=np.int64)])
        if self._dead is not None:
            self._dead = np.concatenate([self._dead, np.zeros(len(ids), dtype=bool)])
        self.size, self._sorted, self.changes = self.size + len(ids), None, self.changes + 1

    def remove(self, ids: Sequence[int]) -> None:
        """Stop returning these ids' vectors: their rows are marked, not moved (a mapped million is
        never copied); saving leaves them out. Absent ids are ignored."""
        gone = np.isin(self._ids, np.asarray(ids, dtype=np.int64))
        self._dead = gone if self._dead is None else self._dead | gone
        self._sorted, self.changes = None, self.changes + 1

    def search(
        self, query: FloatArray, k: int, among: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` highest inner products as (id, score), best first; ties by smaller id.

        With ``among``, only those ids are candidates (ids not in the index are never returned)."""
        vector = np.asarray(query, dtype=np.float32).reshape(-1)
        if among is None:
            labels, scores = self.scores(vector)
        else:
            rows = self._rows(np.unique(np.asarray(among, dtype=np.int64)))[1]
            taken = self._take(rows)
            labels, scores = self._ids[rows], np.empty(len(taken), dtype=np.float32)
            self._product(taken, vector, scores)
        if k < len(scores):
            best = np.argpartition(scores, len(scores) - k)[-k:]
            scores, labels = scores[best], labels[best]
        order = np.lexsort((labels, -scores))[:k]
        return [(int(i), float(s)) for i, s in zip(labels[order], scores[order], strict=True)]

    def scores(self, query: FloatArray) -> tuple[IdArray, FloatArray]:
        """Every live vector's id and inner product with ``query`` (one pass over the matrix)."""
        scores, live = self._scan(np.asarray(query, dtype=np.float32).reshape(-1)), self._live()
        return (self._ids, scores) if live is None else (self._ids[live], scores[live])

    def _scan(self, vector: FloatArray) -> FloatArray:
        """Every row's inner product with ``vector``, ``SCAN_ROWS`` rows a product: BLAS rounds a row's
        sum the same way only in a product of the same size at the same offset, so the pieces are
        the same whatever part of them is mapped (a checkpoint) and what was added since. A mapped
        base lets go of its pages after each piece (``from_bytes``)."""
        base = len(self._base)
        scores = np.empty(self.size, dtype=np.float32)
        for start in range(0, self.size, SCAN_ROWS):
            stop = min(self.size, start + SCAN_ROWS)
            if start < base:
                self._product(self._base[start:stop], vector, scores[start:stop])
                if self._release is not None:
                    self._release(start, stop)
            else:
                self._product(self._tail[start - base : stop - base], vector, scores[start:stop])
        return scores

    def _take(self, rows: IdArray) -> FloatArray:
        """Copies of the rows at these positions, in their order."""
        base = len(self._base)
        if not base or (len(rows) and rows.max() < base):
            return self._base[rows] if base else self._tail[rows]
        taken = np.empty((len(rows), self.dim), dtype=np.float32)
        low = rows < base
        taken[low] = self._base[rows[low]]
        taken[~low] = self._tail[rows[~low] - base]
        return taken

    def rows(self, ids: Sequence[int]) -> IdArray:
        """Positions, among ``scores``' live vectors, of those ``ids`` that are present (absent and
        removed ids are skipped)."""
        rows = self._rows(np.asarray(ids, dtype=np.int64))[1]
        if self._dead is None:
            return rows
        return (np.cumsum(~self._dead) - 1)[rows]

    def vectors(self, ids: Sequence[int]) -> FloatArray:
        """The rows of these ids, in the given order; KeyError names the first absent id."""
        wanted = np.asarray(ids, dtype=np.int64)
        found, rows = self._rows(wanted)
        if len(rows) != len(wanted):
            raise KeyError(f"key {int(wanted[~found][0])} not found")
        return self._take(rows)

    def _rows(self, wanted: IdArray) -> tuple[npt.NDArray[np.bool_], IdArray]:
        """Which of ``wanted`` are present, and the rows of those present (in ``wanted``'s order)."""
        if self._sorted is None:
            order = np.argsort(self._ids, kind="stable")
            self._sorted = (self._ids[order], order)
        keys, rows = self._sorted
        at = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
        found = keys[at] == wanted if len(keys) else np.zeros(len(wanted), dtype=bool)
        if self._dead is not None and len(keys):
            found &= ~self._dead[rows[at]]  # removed: as if absent
        return found, rows[at[found]]


def _blas_product(rows: FloatArray, vector: FloatArray, out: FloatArray) -> None:
    np.matmul(rows, vector, out=out)


def layout(dim: int, ids: IdArray, rows: Iterable[bytes | memoryview]) -> Iterator[bytes | memoryview]:
    """FAISS's bytes of an IndexIDMap2 over an IndexFlatIP of ``ids``, in pieces: ``rows`` are their
    float32 vectors in that order, in pieces of any size (an index written without holding it)."""
    header = _HEADER.pack(dim, len(ids), _UNUSED, _UNUSED, True, 0)
    yield _ID_MAP + header + _FLAT_IP + header + _COUNT.pack(len(ids) * dim)
    yield from rows
    yield _COUNT.pack(len(ids)) + np.ascontiguousarray(ids, dtype="<i8").tobytes()


def aligned_buffer(size: int) -> memoryview:
    """A writable buffer of ``size`` bytes whose byte ``ROWS_OFFSET`` lies on a 64-byte boundary
    (a cache line), to read an index's bytes into (``from_bytes``)."""
    room = np.empty(size + 64, dtype=np.uint8)
    shift = -(room.ctypes.data + ROWS_OFFSET) % 64
    return memoryview(room.data)[shift : shift + size]


def _read_header(view: memoryview, offset: int, tag: bytes) -> tuple[int, int]:
    """(d, ntotal) of the index header at ``offset``, which must carry ``tag`` and inner product."""
    if bytes(view[offset : offset + 4]) != tag or len(view) < offset + 4 + _HEADER.size:
        raise FlatFormatError(f"expected a {tag.decode()} index")
    dim, count, _, _, _, metric = _HEADER.unpack_from(view, offset + 4)
    if dim <= 0 or count < 0 or metric != 0:
        raise FlatFormatError(f"not an inner-product index of vectors (d={dim}, n={count}, metric={metric})")
    return dim, count


def _read_count(view: memoryview, offset: int) -> int:
    if len(view) < offset + _COUNT.size:
        raise FlatFormatError("the file ends early")
    count: int = _COUNT.unpack_from(view, offset)[0]
    return count
