"""An exact index file written straight from the database, a block of vectors at a time: after a
big ingest's move the whole index is never held in memory (a million 384-d vectors are 1.5 GB,
and an index grown add by add holds up to twice that)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from remem.backends.local import flat
from remem.backends.local.kinds import IndexKind
from remem.backends.local.transactions import snapshot
from remem.backends.local.vectors import IndexHeader, VectorIndex

if TYPE_CHECKING:
    from pathlib import Path

    from remem.backends.local.kinds import HnswParams
    from remem.backends.local.records import Records


class _FromDatabase(flat.FlatIndex):
    """An exact index whose vectors stay in the database: it can only be written (``to_bytes``),
    reading them in id order as it goes."""

    def __init__(self, records: Records, dim: int) -> None:
        ids = np.fromiter(
            (row[0] for row in records.conn.execute("SELECT id FROM vectors ORDER BY id")), dtype=np.int64
        )
        super().__init__(dim, ids, np.zeros((0, dim), dtype=np.float32))
        self._records = records

    def to_bytes(self) -> Iterator[bytes | memoryview]:
        """The bytes ``FlatIndex.to_bytes`` gives for these vectors (tested byte for byte), the
        vectors read from the database as they go."""
        return flat.layout(
            self.dim, self._ids, (b"".join(b for _, b in chunk) for chunk in self._records.iter_vectors())
        )


def write_exact(
    records: Records, path: Path, dim: int, hnsw: HnswParams, swap: Callable[[Path, Path], bool] | None = None
) -> int:
    """Write the exact index of every stored vector to ``path`` (atomically, as ``VectorIndex.save``,
    ``swap`` as its) from one snapshot of the database, holding a block of vectors at a time; the
    generation it holds (read in that snapshot)."""
    with snapshot(records.conn):  # the ids and the vectors of one state
        generation = records.generation()
        header = IndexHeader(generation=generation, kind=IndexKind.EXACT, dim=dim, hnsw=hnsw)
        header.store_id = records.store_id()
        engine = _FromDatabase(records, dim)
        header.max_id = int(engine.ids().max()) if engine.size else -1
        VectorIndex(engine, header).save(path, swap=swap)
    return generation
