"""The vector index over unit vectors, keyed by vector id: exact or HNSW, a checkpoint with a header.

The index file is a *checkpoint*, not a mirror of SQLite: a write commits its rows to SQLite and
nothing else; the file records the generation and the highest vector id it was saved at, and a
reader catches it up from SQLite (``sync``): vectors added since are kept beside it (an exact index
appends them to its rows; HNSW scores them exactly and merges them with the graph's hits), vectors
deleted since are tombstones (never returned; an exact index leaves them out when it is saved next).
The file is rewritten when the lag passes a bound (``sync.bound``).

The file is ``REMEM-VECTORS 3\\n``, one JSON header line (generation, highest vector id, kind, dim,
HNSW parameters, tombstones; padded with spaces so that the vectors start on a cache line), the FAISS
index bytes, and ``xxh3-128 HEX\\n`` of everything before that line. It is always replaced
atomically, and read by mapping it (``mapped``): verified a piece at a time, never copied, so that a
cold search of a million vectors neither copies 1.5 GB nor keeps it. A damaged block is caught on
load, and the file rebuilt, instead of giving wrong cosines.
Scores are inner products, which are raw cosines for unit vectors. An exact index is scored in numpy
(``flat``, which reads and writes FAISS's layout); only HNSW loads FAISS (``hnsw``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from remem.arrays import FloatArray
from remem.atomic import atomic_writer
from remem.backends.local.flat import ROWS_OFFSET, FlatIndex, IdArray, aligned_buffer
from remem.backends.local.kinds import HnswParams, IndexKind
from remem.backends.local.mapped import MappedFile
from remem.backends.local.vectors_header import CHECKSUM_PREFIX, MAGIC
from remem.backends.local.verified import FileIdentity, Verified
from remem.errors import StoreError

if TYPE_CHECKING:
    from remem.backends.local.hnsw import HnswGraph

__all__ = ["IdArray", "IndexFileError", "IndexHeader", "VectorIndex"]


class IndexFileError(StoreError):
    """The index file is missing, unreadable or not a remem vector index of the expected shape."""


@dataclass
class IndexHeader:
    """What the index file says about itself: the generation and the highest vector id it holds
    everything up to (``max_id``: -1 for none)."""

    generation: int
    kind: IndexKind
    dim: int
    hnsw: HnswParams = field(default_factory=HnswParams)
    store_id: str = ""
    tombstones: list[int] = field(default_factory=list)
    max_id: int = -1


class VectorIndex:
    """Vectors keyed by id: the checkpoint's engine, the vectors added since (HNSW: scored exactly
    beside the graph), and tombstones (ids never returned)."""

    def __init__(self, engine: FlatIndex | HnswGraph, header: IndexHeader) -> None:
        """Wrap an exact index or an HNSW graph and its header (use ``empty`` or ``load``)."""
        self._engine = engine
        self.header = header
        self._tombstones = set(header.tombstones)  # ids in an HNSW graph that are deleted
        self._recent = _recent(engine)  # HNSW: vectors added since the graph was saved
        self._mapped: MappedFile | None = None  # the file the engine reads in place, if it does
        #: The file it was loaded from as checked, hashed or trusted (``verified``; None: not to record).
        self.verified: Verified | None = None

    @classmethod
    def empty(
        cls, dim: int, kind: IndexKind = IndexKind.EXACT, hnsw: HnswParams | None = None, generation: int = 0
    ) -> VectorIndex:
        """A new, empty index."""
        params = hnsw or HnswParams()
        engine = _hnsw().HnswGraph.empty(dim, params) if kind is IndexKind.HNSW else FlatIndex.empty(dim)
        return cls(engine, IndexHeader(generation=generation, kind=kind, dim=dim, hnsw=params))

    @classmethod
    def load(cls, path: Path, dim: int, trusted: Verified | None = None) -> VectorIndex:
        """Read an index file; IndexFileError if it is missing, damaged or not ``dim``-dimensional.
        Its bytes are hashed unless ``trusted`` names this very file; ``verified`` then holds the
        record of the file to keep (``verified``: None for one that changed just now)."""
        try:
            with path.open("rb") as handle:
                if handle.read(len(MAGIC)) != MAGIC:
                    raise IndexFileError(f"{path} is not a remem vector index")
                header = _parse_header(handle.readline())
                if header.dim != dim:
                    raise IndexFileError(f"{path} is not a {dim}-d remem index")
                mapped = MappedFile(handle)
                checked = _checked(mapped, handle.tell(), trusted)
                engine = _mapped_engine(mapped, handle.tell(), header)
        except OSError as exc:
            raise IndexFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
        except _ChecksumError as exc:
            raise IndexFileError(f"{path} is damaged (its checksum does not match)") from exc
        except (RuntimeError, ValueError, KeyError, TypeError) as exc:
            raise IndexFileError(f"{path} is damaged ({str(exc).splitlines()[0][:120]})") from exc
        index = cls(engine, header)
        index._mapped, index.verified = mapped, checked
        if header.max_id < 0 and engine.size:  # a file saved before the header said it
            header.max_id = max([int(engine.ids().max()), *header.tombstones])
        return index

    def keep_resident(self) -> None:
        """Keep the pages of a mapped file that searches read (a long-lived process: see ``mapped``)."""
        if self._mapped is not None:
            self._mapped.resident = True

    @property
    def kind(self) -> IndexKind:
        """Exact or HNSW."""
        return self.header.kind

    @property
    def size(self) -> int:
        """Vectors the index can return."""
        if isinstance(self._engine, FlatIndex):
            return self._engine.size - self._engine.removed
        return self._engine.size - len(self._tombstones) + self._recent.size - self._recent.removed

    @property
    def tombstones(self) -> frozenset[int]:
        """Ids that are in the HNSW graph but deleted (an exact index leaves them out of its next save)."""
        return frozenset(self._tombstones)

    def ids(self) -> IdArray:
        """Ids of every vector the index can return."""
        if isinstance(self._engine, FlatIndex):
            return self._engine.ids()
        graph = self._engine.ids()
        live = graph[~np.isin(graph, np.fromiter(self._tombstones, dtype=np.int64))]
        return np.concatenate([live, self._recent.ids()])

    def add(self, ids: Sequence[int] | IdArray, vectors: FloatArray) -> None:
        """Add unit vectors (rows) under the given ids (larger than every id the index holds)."""
        if not len(ids):
            return
        engine = self._engine if isinstance(self._engine, FlatIndex) else self._recent
        engine.add(ids, vectors)
        self.header.max_id = max(self.header.max_id, int(np.max(np.asarray(ids))))

    def remove(self, ids: Sequence[int]) -> None:
        """Stop returning these ids: an exact index marks their rows; HNSW tombstones those in its
        graph and drops those added since. Absent ids are ignored."""
        if not len(ids):
            return
        if isinstance(self._engine, FlatIndex):
            self._engine.remove(ids)
            return
        wanted = np.asarray(ids, dtype=np.int64)
        in_graph = wanted[np.isin(wanted, self._engine.ids())]
        self._tombstones.update(int(i) for i in in_graph)
        self._recent.remove(ids)

    def search(
        self, query: FloatArray, k: int, among: Sequence[int] | None = None, ef_search: int | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` highest inner products for one query as (id, score), best first.

        With ``among``, only those ids are candidates. Tombstoned ids are never returned. Exact
        indexes return the true top ``k`` (equal scores: smaller id first); HNSW may return fewer or
        miss some (approximate) of its graph, and scores the vectors added since exactly.
        """
        limit = min(k, self.size if among is None else len(among))
        if limit <= 0:
            return []
        if isinstance(self._engine, FlatIndex):
            return self._engine.search(query, limit, among)
        beam = ef_search or self.header.hnsw.ef_search
        found = self._engine.search(query, limit, among, sorted(self._tombstones), beam)
        if self._recent.size > self._recent.removed:
            found += self._recent.search(query, limit, among)
            found = sorted(found, key=lambda pair: (-pair[1], pair[0]))[:limit]
        return found

    def exact(self) -> FlatIndex | None:
        """The exact engine, to score every vector at once (None for HNSW)."""
        return self._engine if isinstance(self._engine, FlatIndex) else None

    def vectors(self, ids: Sequence[int]) -> FloatArray:
        """The stored vectors of these ids (rows in the given order); KeyError if one is absent."""
        if not len(ids):
            return np.zeros((0, self.header.dim), dtype=np.float32)
        if isinstance(self._engine, FlatIndex):
            return self._engine.vectors(ids)
        wanted = np.asarray(ids, dtype=np.int64)
        if np.isin(wanted, np.fromiter(self._tombstones, dtype=np.int64)).any():
            raise KeyError("a deleted vector")
        recent = np.isin(wanted, self._recent.ids())
        rows = np.empty((len(wanted), self.header.dim), dtype=np.float32)
        if recent.any():
            rows[recent] = self._recent.vectors(wanted[recent].tolist())
        if not recent.all():
            rows[~recent] = self._engine.vectors(wanted[~recent].tolist())
        return rows

    def save(
        self, path: Path, generation: int | None = None, swap: Callable[[Path, Path], bool] | None = None
    ) -> None:
        """Write the checkpoint atomically (temp file, fsync, rename; mode 0600), recording
        ``generation`` (default: the one it already has): an exact index without its removed rows;
        an HNSW graph extended with the vectors added since. ``swap``: as ``atomic_writer``'s."""
        if generation is not None:
            self.header.generation = generation
        if not isinstance(self._engine, FlatIndex) and self._recent.size:
            recent = self._recent.ids()
            self._engine.add(recent, self._recent.vectors(recent.tolist()))
            self._recent = _recent(self._engine)
        self.header.tombstones = sorted(self._tombstones)
        exact = isinstance(self._engine, FlatIndex)
        try:
            with atomic_writer(path, swap=swap) as handle:
                digest = _xxhash().xxh3_128()
                write = _hashed_writer(handle.write, digest)
                write(MAGIC)
                write(_format_header(self.header, ROWS_OFFSET if exact else 0))
                if isinstance(self._engine, FlatIndex):
                    for piece in self._engine.to_bytes():
                        write(piece)
                else:
                    self._engine.write(write)
                handle.write(_checksum_line(digest.hexdigest()))
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from exc


class _ChecksumError(Exception):
    """The index bytes do not match the checksum line."""


def _hnsw() -> Any:
    """The HNSW module, imported when first needed: it loads FAISS."""
    from remem.backends.local import hnsw  # noqa: PLC0415 - lazy: FAISS is needed only by HNSW stores

    return hnsw


def _recent(engine: FlatIndex | HnswGraph) -> FlatIndex:
    """An empty index of the vectors added since ``engine`` was saved: of an HNSW graph, scored on
    the caller's thread (``hnsw.inner_products``); an exact index adds to its own rows."""
    if isinstance(engine, FlatIndex):
        return FlatIndex.empty(engine.dim)
    return FlatIndex.empty(engine.dim, product=_hnsw().inner_products)


def _xxhash() -> Any:
    import xxhash  # noqa: PLC0415 - with numpy: never on `list` or `export`'s path

    return xxhash


def _checked(mapped: MappedFile, start: int, trusted: Verified | None) -> Verified | None:
    """Check that every byte before the file's checksum line (the FAISS bytes begin at ``start``)
    matches that line (else _ChecksumError), unless ``trusted`` is this file with this line
    (``verified``): its identity and checksum, to record, or None for a file too new to be."""
    end = mapped.size - _CHECKSUM_LENGTH
    if end < start:
        raise _ChecksumError
    identity, line = FileIdentity.of(mapped.stat), bytes(mapped.bytes[end:])
    if trusted is not None and trusted.identity == identity and line == _checksum_line(trusted.digest):
        return trusted
    begun = time.time_ns()
    digest = mapped.digest(end)
    if line != _checksum_line(digest):
        raise _ChecksumError
    return Verified(identity, digest) if identity.settled(begun) else None


def _mapped_engine(mapped: MappedFile, start: int, header: IndexHeader) -> FlatIndex | HnswGraph:
    """The index in a mapped file (checked: ``_checked``) whose FAISS bytes start at ``start``, read
    in place."""
    end = mapped.size - _CHECKSUM_LENGTH
    data = mapped.bytes[start:end]
    if header.kind is IndexKind.HNSW:
        graph: HnswGraph = _hnsw().HnswGraph.mapped(data, header.dim)
        return graph
    row_bytes, rows_at = 4 * header.dim, start + ROWS_OFFSET
    flat = FlatIndex.from_bytes(
        data.data, lambda a, b: mapped.release(rows_at + a * row_bytes, rows_at + b * row_bytes)
    )
    if not flat.aligned:  # not written by remem's save: BLAS wants aligned rows, so read a copy
        copy = aligned_buffer(len(data))
        copy[:] = data.data
        flat = FlatIndex.from_bytes(copy)
    return _same_dim(flat, header.dim)


def _same_dim(flat: FlatIndex, dim: int) -> FlatIndex:
    if flat.dim != dim:
        raise ValueError(f"{flat.dim}-d vectors under a {dim}-d header")
    return flat


def _hashed_writer(write: Callable[[Any], int], digest: Any) -> Callable[[Any], int]:
    """``write`` that also feeds what it is given (bytes or a memoryview) to ``digest``."""

    def writing(data: bytes | memoryview) -> int:
        digest.update(data)
        return write(data)

    return writing


_CHECKSUM_LENGTH = len(CHECKSUM_PREFIX) + 32 + 1
#: Where the file's header is padded to: the vectors of an exact index start on a cache line.
_ALIGNMENT = 64


def _checksum_line(hexdigest: str) -> bytes:
    return CHECKSUM_PREFIX + hexdigest.encode() + b"\n"


def _format_header(header: IndexHeader, ahead: int) -> bytes:
    """The header line, padded with spaces so that byte ``ahead`` of what follows it is aligned."""
    record = asdict(header)
    record["kind"] = header.kind.value
    line = json.dumps(record, separators=(",", ":")).encode()
    padding = -(len(MAGIC) + len(line) + 1 + ahead) % _ALIGNMENT
    return line + b" " * padding + b"\n"


def _parse_header(line: bytes) -> IndexHeader:
    record = json.loads(line)
    return IndexHeader(
        generation=int(record["generation"]),
        kind=IndexKind(record["kind"]),
        dim=int(record["dim"]),
        hnsw=HnswParams(**record["hnsw"]),
        tombstones=[int(i) for i in record["tombstones"]],
        store_id=str(record["store_id"]),
        max_id=int(record.get("max_id", -1)),
    )
