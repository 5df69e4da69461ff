"""The local back-end's lanes: cosine over the vector index (or stored vectors), BM25 over FTS5.

Filters select candidate memories in SQLite first; every lane ranks only those, so ``k`` results are
the true top ``k`` among the filtered memories. The vector lane first looks whether the best vectors
of the whole index decide the filtered top ``k`` (filters that select most memories); else it scores
few candidates exactly (their vectors taken from the loaded index), and many through the index with
an id selector (an exact index is exact; if HNSW returns fewer than it should, the candidates are
scored exactly).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from remem.backends.base import Scored
from remem.backends.local.guard import translating
from remem.backends.local.kinds import IndexKind
from remem.backends.local.records import Records
from remem.types import Filters

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.local.vectors import VectorIndex

#: Up to this many filtered candidates are scored exactly from their stored vectors.
EXACT_CANDIDATES = 20_000
#: A filtered vector search first takes at least this many (and 8 × k) of the best vectors of the
#: whole index and keeps those the filters select: when the filters select most memories (a user's
#: token on a team's store) that gives the top ``k`` without listing every selected vector, which
#: took 25-32 ms for 9,000-9,900 of 10,000 (a JOIN and a sort in SQLite); when they select few, the
#: check of 256 ids costs well under a millisecond before the candidates are listed after all.
BEST_FIRST = 256


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
    return _top_of_array(among, matrix @ vector, k)


def _top_of_array(ids: Sequence[int], scores: FloatArray, k: int) -> list[Scored]:
    """``_top`` of many scores: only those at or above the ``k``-th best are sorted in Python (a
    sort of 9,900 pairs took ~50 ms a search), so ties at the border keep the smaller ids."""
    import numpy as np  # noqa: PLC0415 - keeps numpy off the startup path of list/export

    if k < len(scores):
        border = np.partition(scores, len(scores) - k)[len(scores) - k]
        chosen = np.flatnonzero(scores >= border)
        return _top([ids[i] for i in chosen.tolist()], scores[chosen].tolist(), k)
    return _top(ids, scores.tolist(), k)


def _best_then_filtered(
    records: Records, index: VectorIndex, vector: FloatArray, k: int, filters: Filters
) -> list[Scored] | None:
    """Top ``k`` (vector id, cosine) among the filtered vectors when the best of the whole index
    decide them, else None: they do when ``k`` of them pass the filters with a score above the
    last one fetched (no vector left out can then rank among them), or when they are all."""
    fetch = max(BEST_FIRST, 8 * k)
    best = index.search(vector, fetch)
    kept = records.selected_vector_ids([vid for vid, _ in best], filters)
    hits = [(vid, score) for vid, score in best if vid in kept]
    if fetch >= index.size or (len(hits) >= k and hits[k - 1][1] > best[-1][1]):
        return hits[:k]
    return None


def _vector_hits(
    records: Records, index: VectorIndex, vector: FloatArray, k: int, filters: Filters
) -> list[Scored]:
    """Top ``k`` (vector id, cosine) among the vectors of the filtered memories."""
    if not filters.is_empty():
        found = _best_then_filtered(records, index, vector, k, filters)
        if found is not None:
            return found
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


def _vector_rank(
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
    """(memory id, cosine of its best vector), best first, scored exactly (one product per chunk of
    memories, whatever their number)."""
    import numpy as np  # noqa: PLC0415 - keeps numpy off the startup path of list/export

    best: dict[int, float] = {}
    found = records.vectors_of_memories(memory_ids)
    owners = [mid for mid, windows in found.items() for _ in windows]
    blobs = b"".join(blob for windows in found.values() for _, blob in windows)
    if owners:
        scores = np.frombuffer(blobs, dtype="<f4").reshape(len(owners), -1) @ vector
        for mid, score in zip(owners, scores.tolist(), strict=True):
            best[mid] = max(score, best.get(mid, -2.0))
    return sorted(best.items(), key=lambda pair: (-pair[1], pair[0]))


@translating
class LocalVectorLane:
    """The vector lane over one synced index and the store's records."""

    def __init__(self, records: Records, index: VectorIndex, lock: AbstractContextManager[Any]) -> None:
        """Rank with ``index`` (level with ``records``), holding ``lock`` while it is read (another
        thread's write changes it in place)."""
        self._records = records
        self._index = index
        self._lock = lock

    def top(self, vector: FloatArray, k: int, filters: Filters) -> list[Scored]:
        """Exact top ``k`` (memory id, cosine of its best window) among the filtered memories."""
        with self._lock:
            return _vector_rank(self._records, self._index, vector, k, filters)

    def cosines(self, vector: FloatArray, memory_ids: Sequence[int]) -> list[Scored]:
        """(memory id, cosine of its best window), best first, scored exactly."""
        return _memory_cosines(self._records, vector, memory_ids)
