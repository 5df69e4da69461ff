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

    efSearch 64 gave recall@10 1.000 at 0.57 ms per query on 100k clustered 384-d vectors
    (the retired bench/index.py), but at a million it falls short: on bench/scale.py's 1M store
    (vectors mixed from 10k real embeddings, near neighbours in tight groups; 200 queries, FAISS
    alone, one thread; the retired bench/hnsw_beam.py, in git history)
    recall@10 was 0.765 at 64 (0.72 ms p50), 0.876 at 128, 0.953 at 256 (2.3 ms), 0.988 at 512
    (4.3 ms p50, 5.3 ms p99) and 0.999 at 1024 (8.8 ms). So the default is 512: above 0.98 at a
    million for a few milliseconds, where one exact pass costs ~160 ms. "auto" builds HNSW only from
    50k vectors up (10k clustered: 0.86 at 64, 0.99 at 256).
    """

    m: int = 32
    ef_construction: int = 200
    ef_search: int = 512
