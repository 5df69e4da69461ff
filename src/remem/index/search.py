"""Ranking memories: the vector lane (cosine), the keyword lane (BM25), and their fusion (RRF).

Filters select candidate memories in SQLite first; every lane ranks only those, so ``k`` results are
the true top ``k`` among the filtered memories. The vector lane scores few candidates exactly (their
vectors taken from the loaded index), and many through the index with an id selector (an exact
index is exact; if HNSW returns fewer than it should, the candidates are scored exactly).

Hybrid search pools each lane's top ``depth`` and then lets *both* lanes rank every pooled memory —
the vector lane by its exact cosine (pooled memories beyond its top ``depth`` rank after it, by
cosine), the keyword lane by BM25 among the pooled memories that match at least half of the query's
IDF-weighted terms (the others get no keyword rank). Each memory's fused score is Reciprocal Rank
Fusion: the sum over lanes of 1 / (RRF_K + rank).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from remem.index.kinds import IndexKind
from remem.index.memory import Filters, Memory
from remem.index.records import Records

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
MIN_KEYWORD_COVERAGE = 0.2
#: How deep each lane looks before fusion: at least this many, and at least 4 × the requested k.
MIN_HYBRID_DEPTH = 100
#: Up to this many filtered candidates are scored exactly from their stored vectors.
EXACT_CANDIDATES = 20_000


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


@dataclass(frozen=True)
class SearchOutcome:
    """The hits, and what ``min_score`` left out: how many, and the best cosine among them."""

    hits: list[Hit]
    below_min_score: int
    best_below: float | None


def _ranked(scored: Sequence[Scored]) -> list[tuple[int, tuple[float, Lane]]]:
    return [(mid, (score, Lane(place, score))) for place, (mid, score) in enumerate(scored, start=1)]


def _lanes(scored: Sequence[Scored]) -> dict[int, Lane]:
    return {mid: lane for mid, (_, lane) in _ranked(scored)}


def fuse(vector_ranked: Sequence[Scored], keyword_ranked: Sequence[Scored]) -> list[Ranked]:
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


def _exact_scores(records: Records, vector: FloatArray, vector_ids: Sequence[int], k: int) -> list[Scored]:
    """Top ``k`` (vector id, cosine) among the given stored vectors, by exact scoring."""
    import numpy as np  # noqa: PLC0415 - keeps numpy off the startup path of list/export

    best: list[Scored] = []
    for chunk in records.iter_vectors(vector_ids):
        ids = [vid for vid, _ in chunk]
        matrix = np.frombuffer(b"".join(blob for _, blob in chunk), dtype="<f4").reshape(len(chunk), -1)
        best = _top([*(i for i, _ in best), *ids], [*(s for _, s in best), *(matrix @ vector).tolist()], k)
    return best


def _top(ids: Sequence[int], scores: Sequence[float], k: int) -> list[Scored]:
    return sorted(zip(ids, scores, strict=True), key=lambda pair: (-pair[1], pair[0]))[:k]


def _candidate_scores(
    records: Records, index: VectorIndex, vector: FloatArray, among: list[int], k: int
) -> list[Scored]:
    """Exact top ``k`` among few candidates: their vectors from the loaded index (else from SQLite)."""
    try:
        matrix = index.vectors(among)
    except KeyError:  # the index lacks one of them: score the stored vectors instead
        return _exact_scores(records, vector, among, k)
    return _top(among, (matrix @ vector).tolist(), k)


def _vector_hits(
    records: Records, index: VectorIndex, vector: FloatArray, k: int, filters: Filters
) -> list[Scored]:
    """Top ``k`` (vector id, cosine) among the vectors of the filtered memories."""
    among = None if filters.is_empty() else records.candidate_vector_ids(filters)
    if among is not None and len(among) <= EXACT_CANDIDATES:
        return _candidate_scores(records, index, vector, among, k)
    hits = index.search(vector, k, among)
    expected = min(k, len(among) if among is not None else index.size - len(index.tombstones))
    if index.kind is IndexKind.HNSW and len(hits) < expected:  # the graph walk ran dry
        hits = index.search(vector, k, among, ef_search=max(4 * k, 16 * index.header.hnsw.ef_search))
        if len(hits) < expected:
            hits = _exact_scores(records, vector, among if among is not None else records.vector_ids(), k)
    return hits


def vector_rank(
    records: Records, index: VectorIndex, vector: FloatArray, k: int, filters: Filters
) -> list[Scored]:
    """Top ``k`` (memory id, cosine), a memory scoring as its best vector (window).

    When long memories fill the top vectors with several windows each, more vectors are fetched
    until ``k`` distinct memories are found or there are no more.
    """
    fetch = k
    while True:
        hits = _vector_hits(records, index, vector, fetch, filters)
        best = _best_per_memory(records, hits)
        if len(best) >= k or len(hits) < fetch:
            return best[:k]
        fetch *= 2


def _best_per_memory(records: Records, hits: list[Scored]) -> list[Scored]:
    owner = records.memory_of_vectors([vid for vid, _ in hits])
    best: dict[int, float] = {}
    for vid, score in hits:
        mid = owner.get(vid)
        if mid is not None and score > best.get(mid, -2.0):
            best[mid] = score
    return sorted(best.items(), key=lambda pair: (-pair[1], pair[0]))


def _memory_cosines(records: Records, vector: FloatArray, memory_ids: Sequence[int]) -> list[Scored]:
    """(memory id, cosine of its best vector), best first, scored exactly."""
    owner = {
        vid: mid for mid, windows in records.vectors_of_memories(memory_ids).items() for vid, _ in windows
    }
    best: dict[int, float] = {}
    for vid, score in _exact_scores(records, vector, list(owner), len(owner)):
        best[owner[vid]] = max(score, best.get(owner[vid], -2.0))
    return sorted(best.items(), key=lambda pair: (-pair[1], pair[0]))


def _substantial(records: Records, text: str, scored: list[Scored]) -> list[Scored]:
    """Keep the keyword matches that cover at least MIN_KEYWORD_COVERAGE of the query's term weight."""
    if not scored:
        return scored
    coverage = records.keyword_coverage(text, [mid for mid, _ in scored])
    return [(mid, score) for mid, score in scored if coverage[mid] >= MIN_KEYWORD_COVERAGE]


def hybrid_rank(
    records: Records, index: VectorIndex, text: str, vector: FloatArray, k: int, filters: Filters
) -> list[Ranked]:
    """Both lanes over the same filtered memories, pooled and fused (see the module docstring)."""
    depth = max(MIN_HYBRID_DEPTH, 4 * k)
    by_vector = vector_rank(records, index, vector, depth, filters)
    by_keyword = _substantial(records, text, records.keyword_search(text, filters, depth))
    seen = {mid for mid, _ in by_vector}
    extra = [mid for mid, _ in by_keyword if mid not in seen]
    if extra:
        by_vector = by_vector + _memory_cosines(records, vector, extra)
    matched = {mid for mid, _ in by_keyword}
    missing = [mid for mid, _ in by_vector if mid not in matched]
    if missing:
        more = records.keyword_search(text, filters, len(missing), among=missing)
        by_keyword = by_keyword + _substantial(records, text, more)
    return fuse(by_vector, by_keyword)


def rank(
    records: Records,
    index: VectorIndex | None,
    text: str,
    vector: FloatArray | None,
    k: int,
    filters: Filters,
    mode: SearchMode,
) -> list[Ranked]:
    """The best memories for a query in the given mode, best first, at most ``k`` (hybrid: the pool)."""
    if mode is SearchMode.KEYWORD:
        by_keyword = records.keyword_search(text, filters, k)
        return [Ranked(mid, score, None, lane) for mid, (score, lane) in _ranked(by_keyword)]
    if index is None or vector is None:
        raise ValueError(f"{mode.value} search needs the vector index and a query vector")
    if mode is SearchMode.HYBRID:
        return hybrid_rank(records, index, text, vector, k, filters)
    by_vector = vector_rank(records, index, vector, k, filters)
    return [Ranked(mid, score, lane, None) for mid, (score, lane) in _ranked(by_vector)]


def run_search(
    records: Records,
    index: VectorIndex | None,
    text: str,
    vector: FloatArray | None,
    k: int,
    filters: Filters,
    mode: SearchMode,
    min_score: float | None,
) -> SearchOutcome:
    """Rank, apply ``min_score`` (a cosine; not for keyword mode), cut to ``k``, fetch the memories."""
    if min_score is not None and mode is SearchMode.KEYWORD:
        raise ValueError("min_score is a cosine; keyword search has none")
    ranked = rank(records, index, text, vector, k, filters, mode)
    below = []
    if min_score is not None:
        below = [r.vector.score for r in ranked if r.vector is not None and r.vector.score < min_score]
        ranked = [r for r in ranked if r.vector is not None and r.vector.score >= min_score]
    ranked = ranked[:k]
    memories = records.get_many([r.id for r in ranked])
    hits = [Hit(memories[r.id], r.score, r.vector, r.keyword) for r in ranked if r.id in memories]
    return SearchOutcome(hits, len(below), max(below) if below else None)
