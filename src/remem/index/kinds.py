"""Index kinds and HNSW parameters: plain data, importable without numpy or FAISS."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class IndexKind(str, Enum):
    """How vectors are searched."""

    EXACT = "exact"  # IndexIDMap2(IndexFlatIP): every vector scored; deletions are physical
    HNSW = "hnsw"  # IndexIDMap2(IndexHNSWFlat, inner product): approximate; deletions are tombstoned


@dataclass(frozen=True)
class HnswParams:
    """HNSW graph degree (M), build beam (efConstruction) and default search beam (efSearch)."""

    m: int = 32
    ef_construction: int = 200
    ef_search: int = 128
