"""Writing the vector index checkpoint: the file made level with the database, atomically, and the
log of deletions it holds pruned. The caller holds the writers' lock (no commit can come between).

An exact index is written from the database a block of vectors at a time (``streamed``): it never
holds the vectors added since the last checkpoint in memory, however many a big ingest moved in.
An HNSW graph is caught up (``sync``), extended with the vectors added since and saved."""

from __future__ import annotations

from typing import TYPE_CHECKING

from remem.backends.local.kinds import IndexKind
from remem.backends.local.streamed import write_exact
from remem.backends.local.transactions import atomic

if TYPE_CHECKING:
    from remem.backends.local.home import Home
    from remem.backends.local.vectors import VectorIndex


def write(home: Home, dim: int, index: VectorIndex | None) -> int:
    """Write the checkpoint of the store's vectors at the database's generation (``index``: the
    HNSW index caught up to it; unused for an exact one); returns that generation."""
    records = home.records
    generation = records.generation()
    if index is None or index.kind is IndexKind.EXACT:
        write_exact(records, home.index_path, dim, generation, home.settings.hnsw)
    else:
        index.save(home.index_path, generation)
    if not records.conn.in_transaction:  # inside a read snapshot the log is pruned next time
        with atomic(records.conn):
            records.forget_deleted(generation)
    return generation


def compact(home: Home, dim: int) -> int:
    """Write the checkpoint if any vector was added or deleted since it was saved, or it is missing
    or unusable (the caller holds the writers' lock); how many vectors it caught up (0: none)."""
    from remem.backends.local import sync  # noqa: PLC0415 - sync imports this module's neighbours

    behind = sync.lag(home.records, home.index_path)
    if behind == 0:
        return 0
    settings = home.settings
    index = None
    if settings.built_kind is IndexKind.HNSW:
        index = sync.synced_index(
            home.records, home.index_path, dim, settings.built_kind, settings.hnsw
        ).index
    write(home, dim, index)
    return home.records.vector_count() if behind is None else behind
