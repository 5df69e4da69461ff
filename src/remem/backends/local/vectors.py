"""The vector index over unit vectors, keyed by vector id: exact or HNSW, with tombstones and a header.

The index file is ``REMEM-VECTORS 3\\n``, one JSON header line (generation, kind, dim, HNSW parameters,
tombstones; padded with spaces so that the vectors start on a cache line), the FAISS index bytes, and
``xxh3-128 HEX\\n`` of everything before that line. It is always replaced atomically, and read by
mapping it (``mapped``): verified a piece at a time, never copied, so that a cold search of a million
vectors neither copies 1.5 GB nor keeps it. A damaged block is caught on load, and the file rebuilt,
instead of giving wrong cosines. Files of versions 2 (a sha256 of the FAISS bytes) and 1 (no
checksum) are still read, into memory as before; the next save writes version 3.
Scores are inner products, which are raw cosines for unit vectors. An exact index is scored in numpy
(``flat``, which reads and writes FAISS's layout); only HNSW loads FAISS (``hnsw``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np

from remem.arrays import FloatArray
from remem.atomic import atomic_writer
from remem.backends.local.flat import ROWS_OFFSET, FlatIndex, IdArray, aligned_buffer
from remem.backends.local.kinds import HnswParams, IndexKind
from remem.backends.local.mapped import MappedFile
from remem.backends.local.vectors_header import CHECKSUM_PREFIX, CHECKSUM_PREFIX_V2, MAGIC, MAGIC_V2, MAGICS
from remem.errors import StoreError

if TYPE_CHECKING:
    from remem.backends.local.hnsw import HnswGraph

__all__ = ["IdArray", "IndexFileError", "IndexHeader", "VectorIndex"]


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


class VectorIndex:
    """Vectors keyed by id. Tombstoned ids stay in an HNSW graph but are never returned."""

    def __init__(self, engine: FlatIndex | HnswGraph, header: IndexHeader) -> None:
        """Wrap an exact index or an HNSW graph and its header (use ``empty`` or ``load``)."""
        self._engine = engine
        self.header = header
        self._tombstones = set(header.tombstones)
        self._mapped: MappedFile | None = None  # the file the engine reads in place, if it does

    @classmethod
    def empty(
        cls, dim: int, kind: IndexKind = IndexKind.EXACT, hnsw: HnswParams | None = None, generation: int = 0
    ) -> VectorIndex:
        """A new, empty index."""
        params = hnsw or HnswParams()
        engine = _hnsw().HnswGraph.empty(dim, params) if kind is IndexKind.HNSW else FlatIndex.empty(dim)
        return cls(engine, IndexHeader(generation=generation, kind=kind, dim=dim, hnsw=params))

    @classmethod
    def load(cls, path: Path, dim: int) -> VectorIndex:
        """Read an index file; IndexFileError if it is missing, damaged or not ``dim``-dimensional."""
        try:
            with path.open("rb") as handle:
                magic = handle.read(len(MAGIC))
                if magic not in MAGICS:
                    raise IndexFileError(f"{path} is not a remem vector index")
                header = _parse_header(handle.readline())
                if header.dim != dim:
                    raise IndexFileError(f"{path} is not a {dim}-d remem index")
                if magic == MAGIC:
                    mapped = MappedFile(handle)
                    engine: FlatIndex | HnswGraph = _mapped_engine(mapped, handle.tell(), header)
                else:
                    engine, mapped = _read_engine(handle, header, checked=magic == MAGIC_V2), None
        except OSError as exc:
            raise IndexFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
        except _ChecksumError as exc:
            raise IndexFileError(f"{path} is damaged (its checksum does not match)") from exc
        except (RuntimeError, ValueError, KeyError, TypeError) as exc:
            raise IndexFileError(f"{path} is damaged ({str(exc).splitlines()[0][:120]})") from exc
        index = cls(engine, header)
        index._mapped = mapped
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
        """Vectors in the index, tombstoned ones included."""
        return self._engine.size

    @property
    def tombstones(self) -> frozenset[int]:
        """Ids that are in the graph but deleted (HNSW only; an exact index removes them)."""
        return frozenset(self._tombstones)

    def ids(self) -> IdArray:
        """Ids of all vectors in the index (tombstoned ones included), in insertion order."""
        return self._engine.ids()

    def add(self, ids: Sequence[int] | IdArray, vectors: FloatArray) -> None:
        """Add unit vectors (rows) under the given ids."""
        if len(ids):
            self._engine.add(ids, vectors)

    def remove(self, ids: Sequence[int]) -> None:
        """Stop returning these ids: removed from an exact index, tombstoned in HNSW."""
        if not len(ids):
            return
        if isinstance(self._engine, FlatIndex):
            self._engine.remove(ids)
        else:
            self._tombstones.update(int(i) for i in ids)

    def search(
        self, query: FloatArray, k: int, among: Sequence[int] | None = None, ef_search: int | None = None
    ) -> list[tuple[int, float]]:
        """The ``k`` highest inner products for one query as (id, score), best first.

        With ``among``, only those ids are candidates. Tombstoned ids are never returned. Exact
        indexes return the true top ``k`` (equal scores: smaller id first); HNSW may return fewer or
        miss some (approximate).
        """
        limit = min(k, self.size if among is None else len(among))
        if limit <= 0:
            return []
        if isinstance(self._engine, FlatIndex):
            return self._engine.search(query, limit, among)
        beam = ef_search or self.header.hnsw.ef_search
        return self._engine.search(query, limit, among, sorted(self._tombstones), beam)

    def exact(self) -> FlatIndex | None:
        """The exact engine, to score every vector at once (None for HNSW)."""
        return self._engine if isinstance(self._engine, FlatIndex) else None

    def vectors(self, ids: Sequence[int]) -> FloatArray:
        """The stored vectors of these ids (rows in the given order); KeyError if one is absent."""
        if not len(ids):
            return np.zeros((0, self.header.dim), dtype=np.float32)
        return self._engine.vectors(ids)

    def save(self, path: Path, generation: int | None = None) -> None:
        """Write the index atomically (temp file, fsync, rename; mode 0600), recording ``generation``
        (default: the one it already has)."""
        if generation is not None:
            self.header.generation = generation
        self.header.tombstones = sorted(self._tombstones)
        exact = isinstance(self._engine, FlatIndex)
        try:
            with atomic_writer(path) as handle:
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


def _xxhash() -> Any:
    import xxhash  # noqa: PLC0415 - with numpy: never on `list` or `export`'s path

    return xxhash


def _mapped_engine(mapped: MappedFile, start: int, header: IndexHeader) -> FlatIndex | HnswGraph:
    """The index in a mapped version-3 file whose FAISS bytes start at ``start``, read in place once
    every byte before the checksum line matches it."""
    end = mapped.size - _CHECKSUM_LENGTH
    if end < start or bytes(mapped.bytes[end:]) != _checksum_line(mapped.digest(end)):
        raise _ChecksumError
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


def _read_engine(handle: BinaryIO, header: IndexHeader, *, checked: bool) -> FlatIndex | HnswGraph:
    """The index after the header line of a version 1 or 2 file, read into memory, its sha256
    verified when the file has one."""
    if header.kind is IndexKind.HNSW:
        digest = hashlib.sha256()
        graph: HnswGraph = _hnsw().HnswGraph.read(_hashed_reader(handle.read, digest), header.dim)
        if checked and handle.read() != _checksum_line_v2(digest.hexdigest()):
            raise _ChecksumError
        return graph
    data = _read_rest(handle)
    if checked:
        data, tail = data[:-_CHECKSUM_LENGTH_V2], data[-_CHECKSUM_LENGTH_V2:]
        if len(tail) != _CHECKSUM_LENGTH_V2 or bytes(tail) != _checksum_line_v2(
            hashlib.sha256(data).hexdigest()
        ):
            raise _ChecksumError
    return _same_dim(FlatIndex.from_bytes(data), header.dim)


def _read_rest(handle: BinaryIO) -> memoryview:
    """The rest of the file, read into a buffer where an exact index's vectors are aligned."""
    size = os.fstat(handle.fileno()).st_size - handle.tell()
    data, done = aligned_buffer(size), 0
    while done < size:
        got = handle.readinto(data[done:])  # type: ignore[attr-defined]
        if not got:
            return data[:done]  # the file shrank meanwhile: the checksum or the parse will say so
        done += got
    return data


def _hashed_reader(read: Callable[[int], bytes], digest: Any) -> Callable[[int], bytes]:
    """``read`` that also feeds what it returns to ``digest``."""

    def reading(size: int) -> bytes:
        data = read(size)
        digest.update(data)
        return data

    return reading


def _hashed_writer(write: Callable[[Any], int], digest: Any) -> Callable[[Any], int]:
    """``write`` that also feeds what it is given (bytes or a memoryview) to ``digest``."""

    def writing(data: bytes | memoryview) -> int:
        digest.update(data)
        return write(data)

    return writing


_CHECKSUM_LENGTH = len(CHECKSUM_PREFIX) + 32 + 1
_CHECKSUM_LENGTH_V2 = len(CHECKSUM_PREFIX_V2) + 64 + 1
#: Where a version-3 file's header is padded to: the vectors of an exact index start on a cache line.
_ALIGNMENT = 64


def _checksum_line(hexdigest: str) -> bytes:
    return CHECKSUM_PREFIX + hexdigest.encode() + b"\n"


def _checksum_line_v2(hexdigest: str) -> bytes:
    return CHECKSUM_PREFIX_V2 + hexdigest.encode() + b"\n"


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
    )
