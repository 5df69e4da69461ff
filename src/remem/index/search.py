"""Ranking memories: the vector lane (cosine), the keyword lane (BM25), and their fusion (RRF).

Every lane ranks only the memories the filters select. Hybrid search pools each lane's top
``depth`` and then lets *both* lanes rank every pooled memory — the vector lane by its exact cosine
(pooled memories beyond its top ``depth`` rank after it, by cosine), the keyword lane by BM25 among
the pooled memories that match at least half of the query's IDF-weighted terms (the others get no
keyword rank). Each memory's fused score is Reciprocal Rank Fusion: the sum over lanes of
1 / (RRF_K + rank).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from remem.index.records import Filters, Memory, Records

if TYPE_CHECKING:
    from remem.index.vectors import FloatArray, VectorIndex

#: (memory id, lane score), best first.
Scored = tuple[int, float]
#: The RRF constant of Cormack, Clarke & Büttcher (SIGIR 2009); it damps the weight of the top
#: ranks so that one lane's first place does not outvote agreement between lanes.
RRF_K = 60
#: In hybrid mode a keyword match counts only if it matches at least this share of the query's
#: IDF-weighted terms: one common word shared by chance ("flow", "server") must not outvote meaning,
#: while a rare identifier carries most of a query's weight on its own.
MIN_KEYWORD_COVERAGE = 0.5
#: How deep each lane looks before fusion: at least this many, and at least 4 × the requested k.
MIN_HYBRID_DEPTH = 100


class SearchMode(str, Enum):
    """How memories are ranked."""

    VECTOR = "vector"  # cosine of embeddings: meaning, paraphrases
    KEYWORD = "keyword"  # BM25 over analyzed terms: exact words and identifiers; needs no model
    HYBRID = "hybrid"  # both, fused with RRF


@dataclass(frozen=True)
class Lane:
    """A memory's place in one lane: 1-based rank and that lane's score (cosine or BM25)."""

    rank: int
    score: float


@dataclass(frozen=True)
class Hit:
    """A search result. ``score`` is the mode's score: cosine, BM25, or the fused RRF score."""

    memory: Memory
    score: float
    vector: Lane | None = None
    keyword: Lane | None = None


@dataclass(frozen=True)
class Ranked:
    """A memory id with its lanes, before the memory itself is fetched."""

    id: int
    score: float
    vector: Lane | None
    keyword: Lane | None


def _ranked(scored: Sequence[Scored]) -> list[tuple[int, tuple[float, Lane]]]:
    return [(mid, (score, Lane(place, score))) for place, (mid, score) in enumerate(scored, start=1)]


def _lanes(scored: Sequence[Scored]) -> dict[int, Lane]:
    return {mid: lane for mid, (_, lane) in _ranked(scored)}


def fuse(
    vector_ranked: Sequence[tuple[int, float]], keyword_ranked: Sequence[tuple[int, float]]
) -> list[Ranked]:
    """Reciprocal Rank Fusion of two best-first (id, score) lists, best first.

    Ties are broken by the better vector score, then the smaller id, so the order is deterministic.
    """
    vector, keyword = _lanes(vector_ranked), _lanes(keyword_ranked)
    fused = []
    for mid in vector.keys() | keyword.keys():
        lanes = (vector.get(mid), keyword.get(mid))
        score = sum(1.0 / (RRF_K + lane.rank) for lane in lanes if lane is not None)
        fused.append(Ranked(mid, score, *lanes))
    return sorted(fused, key=lambda r: (-r.score, -(r.vector.score if r.vector else -2.0), r.id))


def hybrid_rank(
    records: Records, index: VectorIndex, text: str, vector: FloatArray, k: int, filters: Filters
) -> list[Ranked]:
    """Both lanes over the same filtered memories, pooled and fused (see the module docstring)."""
    import numpy as np  # noqa: PLC0415 - vector paths only

    depth = max(MIN_HYBRID_DEPTH, 4 * k)
    among = None if filters.is_empty() else records.candidate_ids(filters)
    by_vector = index.search(vector, depth, among)
    by_keyword = _substantial(records, text, records.keyword_search(text, filters, depth))
    seen = {mid for mid, _ in by_vector}
    extra = [mid for mid, _ in by_keyword if mid not in seen]
    if extra:
        blobs = records.vectors_of(extra)
        matrix = np.frombuffer(b"".join(blobs[mid] for mid in extra), dtype="<f4").reshape(len(extra), -1)
        cosines = matrix @ vector.astype(np.float32)
        by_vector = by_vector + sorted(zip(extra, map(float, cosines), strict=True), key=lambda p: -p[1])
    matched = {mid for mid, _ in by_keyword}
    missing = [mid for mid, _ in by_vector if mid not in matched]
    if missing:
        more = records.keyword_search(text, filters, len(missing), among=missing)
        by_keyword = by_keyword + _substantial(records, text, more)
    return fuse(by_vector, by_keyword)


def _substantial(records: Records, text: str, scored: list[Scored]) -> list[Scored]:
    """Keep the keyword matches that cover at least MIN_KEYWORD_COVERAGE of the query's term weight."""
    if not scored:
        return scored
    coverage = records.keyword_coverage(text, [mid for mid, _ in scored])
    return [(mid, score) for mid, score in scored if coverage[mid] >= MIN_KEYWORD_COVERAGE]


def rank(
    records: Records,
    index: VectorIndex | None,
    text: str,
    vector: FloatArray | None,
    k: int,
    filters: Filters,
    mode: SearchMode,
) -> list[Ranked]:
    """The best memories for a query in the given mode, best first, at most ``k`` (hybrid: the pool).

    ``index`` and ``vector`` are needed for the vector and hybrid modes.
    """
    if mode is SearchMode.KEYWORD:
        return [
            Ranked(mid, s, None, Lane(r, s))
            for r, (mid, s) in enumerate(records.keyword_search(text, filters, k), 1)
        ]
    if index is None or vector is None:
        raise ValueError(f"{mode.value} search needs the vector index and a query vector")
    if mode is SearchMode.HYBRID:
        return hybrid_rank(records, index, text, vector, k, filters)
    among = None if filters.is_empty() else records.candidate_ids(filters)
    return [Ranked(mid, score, lane, None) for mid, (score, lane) in _ranked(index.search(vector, k, among))]
