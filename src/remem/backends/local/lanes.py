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
from remem.backends.local.records import Records
from remem.types import Filters

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.local.flat import FlatIndex, IdArray
    from remem.backends.local.vectors import VectorIndex

#: Up to this many filtered candidates are scored exactly from their stored vectors.
EXACT_CANDIDATES = 20_000
#: A filtered vector search first takes at least this many (and 2 × k) of the best vectors of the
#: whole index and keeps those the filters select: when the filters select most memories (a user's
#: token on a team's store) that gives the top ``k`` without listing every selected vector, which
#: took 14-32 ms for 9,000-10,000 of 10,000 (a JOIN and a sort in SQLite); each id checked costs
#: about as much as a selected vector listed (2-5 µs), so rounds of 4× more go on only while the share
#: passing so far says they will decide it reading fewer rows than listing would.
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


def _top_of_array(ids: Sequence[int] | IdArray, scores: FloatArray, k: int) -> list[Scored]:
    """``_top`` of many scores in numpy: only those at or above the ``k``-th best are sorted (a
    sort of 9,900 pairs in Python took ~50 ms a search), so ties at the border keep the smaller ids."""
    import numpy as np  # noqa: PLC0415 - keeps numpy off the startup path of list/export

    labels = np.asarray(ids, dtype=np.int64)
    if k < len(scores):
        border = np.partition(scores, len(scores) - k)[len(scores) - k]
        chosen = np.flatnonzero(scores >= border)
        labels, scores = labels[chosen], scores[chosen]
    order = np.lexsort((labels, -scores))[:k]
    return list(zip(labels[order].tolist(), scores[order].tolist(), strict=True))


class _QueryScores:
    """One query against the whole index and the store: an exact index scores every vector once (one
    pass over the matrix, however many rounds and candidates a search asks about); HNSW walks its
    graph."""

    def __init__(self, records: Records, index: VectorIndex, vector: FloatArray) -> None:
        self.records, self.index, self.vector = records, index, vector
        self._flat = index.exact()
        self._all: tuple[int, IdArray, FloatArray] | None = None

    def _scores(self, flat: FlatIndex) -> tuple[IdArray, FloatArray]:
        """Every vector's id and score, computed again if the index changed since (a write by
        another thread between two calls of one search)."""
        if self._all is None or self._all[0] != flat.changes:
            self._all = (flat.changes, *flat.scores(self.vector))
        return self._all[1], self._all[2]

    def best(self, n: int) -> list[Scored]:
        """The ``n`` best (vector id, cosine) of the whole index, best first (ties: smaller id)."""
        if self._flat is None:
            return self.index.search(self.vector, n)
        ids, scores = self._scores(self._flat)
        return _top_of_array(ids, scores, n)

    def selected(self, vector_ids: list[int], filters: Filters) -> set[int]:
        """Those of ``vector_ids`` whose memories the filters select."""
        return self.records.selected_vector_ids(vector_ids, filters)

    def candidates(self, filters: Filters) -> list[int]:
        """Every vector of the memories the filters select."""
        return self.records.candidate_vector_ids(filters)

    def among(self, candidates: Sequence[int], k: int) -> list[Scored] | None:
        """Exact top ``k`` among these vector ids: from the whole index's scores (exact index) or
        their vectors in the index (few candidates on HNSW), else from SQLite when the index lacks
        one; None when they are too many to score one by one on HNSW."""
        if self._flat is not None:
            ids, scores = self._scores(self._flat)
            rows = self._flat.rows(candidates)
            if len(rows) == len(candidates):
                return _top_of_array(ids[rows], scores[rows], k)
        elif len(candidates) > EXACT_CANDIDATES:
            return None
        try:
            return _top_of_array(candidates, self.index.vectors(candidates) @ self.vector, k)
        except KeyError:  # the index lacks one of them: score the stored vectors instead
            return _exact_scores(self.records, self.vector, candidates, k)


def _best_then_filtered(scores: _QueryScores, k: int, filters: Filters) -> list[Scored] | None:
    """Top ``k`` (vector id, cosine) among the filtered vectors when the best of the whole index
    decide them, else None: they do when ``k`` of them pass the filters with a score above the
    last one fetched (no vector left out can then rank among them), or when they are all. Rounds
    of 4× more (see BEST_FIRST) go on while checking looks cheaper than listing."""
    size = scores.index.size
    fetch, passed, checked = max(BEST_FIRST, 2 * k), set[int](), set[int]()
    while True:
        best = scores.best(min(fetch, size))
        new = [vid for vid, _ in best if vid not in checked]
        passed |= scores.selected(new, filters)
        checked.update(new)
        hits = [(vid, score) for vid, score in best if vid in passed]
        if fetch >= size or (len(hits) >= k and hits[k - 1][1] > best[-1][1]):
            return hits[:k]
        share = len(passed) / max(len(checked), 1)
        needed = 2 * k / share if share else float("inf")  # ids to check that would likely decide it
        if needed > share * size:  # listing the selected vectors reads fewer rows
            return None
        fetch = max(4 * fetch, int(needed))


def _worth_probing(scores: _QueryScores, k: int, filters: Filters, stamp: bytes) -> bool:
    """Whether the best of the whole index may decide the filtered top ``k`` (``_best_then_filtered``),
    given how many vectors the filters selected when a search listed them in this state of the
    keyword index (unknown: probed): not when they are no more than its first round checks (listing
    them reads fewer rows), nor when that round would find under half of ``k`` passing at their
    share (its checks wasted: a tag on a tenth of the 10k bench store took 0.4 ms of 2.4 before the
    listing). Either way the top is the same, exact."""
    selected = scores.records.keyword_counts.listed(stamp, filters)
    if selected is None:
        return True
    fetch = max(BEST_FIRST, 2 * k)
    return selected > fetch and selected * fetch >= k / 2 * max(scores.index.size, 1)


def _selects_all(filters: Filters) -> bool:
    """True for filters that select every memory, superseded and expired ones too."""
    return filters.is_empty() and not filters.hides()


def _vector_hits(scores: _QueryScores, k: int, filters: Filters) -> list[Scored]:
    """Top ``k`` (vector id, cosine) among the vectors of the filtered memories."""
    index, among = scores.index, None
    if _selects_all(filters) and index.exact() is not None:
        return scores.best(k)
    if not _selects_all(filters):
        counts, conn = scores.records.keyword_counts, scores.records.conn
        stamp = counts.stamp(conn)
        found = _best_then_filtered(scores, k, filters) if _worth_probing(scores, k, filters, stamp) else None
        if found is None:
            among = scores.candidates(filters)
            counts.note_listed(stamp, filters, len(among))
            found = scores.among(among, k)
        if found is not None:
            return found
    hits = index.search(scores.vector, k, among)
    expected = min(k, len(among) if among is not None else index.size)
    if len(hits) < expected:  # the graph walk ran dry
        hits = index.search(scores.vector, k, among, ef_search=max(4 * k, 16 * index.header.hnsw.ef_search))
        if len(hits) < expected:
            everything = among if among is not None else scores.records.vector_ids()
            hits = _exact_scores(scores.records, scores.vector, everything, k)
    return hits


def _vector_rank(scores: _QueryScores, k: int, filters: Filters) -> list[Scored]:
    """Top ``k`` (memory id, cosine), a memory scoring as its best vector (window).

    When long memories fill the top vectors with several windows each, more vectors are fetched
    until ``k`` distinct memories are found or there are no more.
    """
    fetch = k
    while True:
        hits = _vector_hits(scores, fetch, filters)
        best = _best_per_memory(scores.records, hits)
        if len(best) >= k or len(hits) < fetch:
            return best[:k]
        fetch *= 2


def _best_per_memory(records: Records, hits: list[Scored]) -> list[Scored]:
    return _best_per_memory_of(records.memory_of_vectors([vid for vid, _ in hits]), hits)


def _memory_cosines(scores: _QueryScores, memory_ids: Sequence[int]) -> list[Scored]:
    """(memory id, cosine of its best vector), best first, scored exactly: from the index when it
    holds their vectors (their stored bytes are not read), else from SQLite."""
    windows = scores.records.vector_ids_of_memories(memory_ids)
    owner = {vid: mid for mid, vids in windows.items() for vid in vids}
    scored = scores.among(list(owner), len(owner)) if owner else []
    if scored is None:  # too many for HNSW's lookups: SQLite's bytes
        scored = _exact_scores(scores.records, scores.vector, list(owner), len(owner))
    return _best_per_memory_of(owner, scored)


def _best_per_memory_of(owner: dict[int, int], hits: list[Scored]) -> list[Scored]:
    """(memory id, its best vector's score), best first; vectors without an owner are skipped."""
    best: dict[int, float] = {}
    for vid, score in hits:
        mid = owner.get(vid)
        if mid is not None and score > best.get(mid, -2.0):
            best[mid] = score
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
        self._last: _QueryScores | None = None

    def _scores(self, vector: FloatArray) -> _QueryScores:
        """The query's scores, reused while the same vector is asked about (one search's calls)."""
        if self._last is None or self._last.vector is not vector:
            self._last = _QueryScores(self._records, self._index, vector)
        return self._last

    def top(self, vector: FloatArray, k: int, filters: Filters) -> list[Scored]:
        """Exact top ``k`` (memory id, cosine of its best window) among the filtered memories."""
        with self._lock:
            return _vector_rank(self._scores(vector), k, self._records.needed_filters(filters))

    def cosines(self, vector: FloatArray, memory_ids: Sequence[int]) -> list[Scored]:
        """(memory id, cosine of its best window), best first, scored exactly."""
        with self._lock:
            return _memory_cosines(self._scores(vector), memory_ids)
