"""Index kinds and HNSW parameters: plain data, importable without numpy or FAISS."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class IndexKind(str, Enum):
    """How vectors are searched."""

    EXACT = "exact"  # IndexIDMap2(IndexFlatIP): every vector scored; deletions are physical
    HNSW = "hnsw"  # IndexIDMap2(IndexHNSWFlat, inner product): approximate; deletions are tombstoned

    def __str__(self) -> str:
        """The kind's name, as users write it."""
        return self.value


@dataclass(frozen=True)
class HnswParams:
    """HNSW graph degree (M), build beam (efConstruction) and default search beam (efSearch).

    efSearch 64 gives recall@10 1.000 at 0.57 ms per query on 100k clustered 384-d vectors
    (bench/index.py); "auto" builds HNSW only from 50k vectors up, where that holds. Smaller HNSW
    stores may want a larger --ef-search (10k clustered: 0.86 at 64, 0.95 at 128, 0.99 at 256).
    """

    m: int = 32
    ef_construction: int = 200
    ef_search: int = 64
