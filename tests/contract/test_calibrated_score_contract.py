"""The shown score is a calibrated relevance in [0, 1] on both back-ends (issue #48): a lone strong
hit no longer shows 0, a two-hit pool no longer ±1, the same memory no longer jumps with the size
of the pool, ``min_score`` filters that one scale in every mode, and a PostgreSQL store shows the
scores a local store of the same memories shows."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from remem import Filters, Memories, NewMemory, SearchMode
from remem.backends.local import LocalBackend
from remem.core.opening import model_catalog
from remem.testing import FakeEmbedder

if TYPE_CHECKING:
    from remem.backends.base import Backend

MODES = (SearchMode.HYBRID, SearchMode.VECTOR, SearchMode.KEYWORD)
KEY = "bob rotates the deploy key every ninety days"
BOBS = [NewMemory(KEY, user="bob"), NewMemory("bob likes green tea in the morning", user="bob")]
SHARED = [NewMemory(f"team note {i}: the weekly review of topic number {i} went fine") for i in range(20)]
#: Queries whose words few memories hold (see ``TOLERANCE``).
QUERIES = ("deploy key rotation", "green tea", "ninety days", KEY)
#: How far a PostgreSQL store's scores may be from a local store's. The cosines agree to float32
#: (about 1e-6), but the back-ends' BM25 differ: a local store counts a term's IDF as FTS5 does,
#: ln((N - n + 0.5) / (n + 0.5)), PostgreSQL as Lucene does, ln(1 + (N - n + 0.5) / (n + 0.5)). For a
#: term held by one memory of 22 that is 2.66 against 2.73, 3 % of the keyword term (about 1 for a
#: match of every word); the map's keyword weight is at most 2 and σ' at most 1/4, so the scores
#: may differ by 0.25 · 2 · 0.03 = 0.015. (A term more than half the memories hold gets FTS5's
#: floor, 1e-6, locally, and its whole Lucene IDF on PostgreSQL: such queries' scores differ more,
#: as their raw BM25 already did.)
TOLERANCE = 0.02


def _memories(backend: Backend, memories: list[NewMemory]) -> Memories:
    found = Memories(backend, model_catalog(environ={}), FakeEmbedder())
    found.add_many(memories)
    return found


def test_a_lone_strong_hit_shows_a_high_score(backend: Backend) -> None:
    memories = _memories(backend, [NewMemory(KEY, user="bob"), *SHARED])
    for mode in MODES:
        (hit,) = memories.search(KEY, mode=mode, user="bob")  # the filter pools one memory
        assert hit.score > 0.5, mode  # was 0.0000 in hybrid mode: the z-score of a pool of one


def test_a_two_hit_pool_shows_what_each_hit_is_worth(backend: Backend) -> None:
    memories = _memories(backend, [NewMemory(KEY), NewMemory("green tea in the morning")])
    first, second = memories.search("deploy key rotation", mode="hybrid")
    assert first.memory.text == KEY
    assert 0.0 < second.score < 0.1 < first.score < 1.0  # was +0.5 / -0.5 (±1 with lanes agreeing)


def test_the_same_memory_scores_alike_in_a_small_and_a_large_pool(backend: Backend) -> None:
    """``user="bob"`` pools two memories, ``shared=True`` 22: the fused z-score of bob's deploy key
    memory went from 1.0 to 4.14 between them. Now it is put back into its lanes' units (its own
    cosine and BM25 per query weight, nearly the same in both pools) before the map."""
    memories = _memories(backend, [*BOBS, *SHARED])
    scores = []
    for shared in (False, True):
        found = memories.search("deploy key rotation", k=3, where=Filters.of(user="bob", shared=shared))
        assert found[0].memory.text == KEY and found[0].calibration is not None
        scores.append((found[0].calibration.ranking, found[0].score))
    (small, alone), (large, among) = scores
    assert large - small > 3.0  # the ranking score still moves with the pool, as fusion needs
    assert abs(alone - among) < 0.02 and 0.3 < among < 0.7


def test_min_score_filters_one_scale_in_every_mode(backend: Backend) -> None:
    memories = _memories(backend, [*BOBS, *SHARED])
    for mode in MODES:
        everything = memories.search(KEY, k=30, mode=mode)
        assert everything[0].memory.text == KEY and everything[0].score >= 0.5, mode
        kept = memories.search(KEY, k=30, mode=mode, min_score=0.5)  # keyword mode: refused before
        assert [h.memory.id for h in kept] == [h.memory.id for h in everything if h.score >= 0.5]
        assert kept.below_min_score == len(everything) - len(kept)
        assert all(0.0 <= h.score <= 1.0 for h in everything)


def test_both_back_ends_show_the_same_scores(backend: Backend, tmp_path: Path) -> None:
    memories = _memories(backend, [*BOBS, *SHARED])
    reference = _memories(LocalBackend.open(tmp_path / "reference", create=True), [*BOBS, *SHARED])
    try:
        for query in QUERIES:
            for mode in MODES:
                got, want = memories.search(query, k=10, mode=mode), reference.search(query, k=10, mode=mode)
                assert [h.memory.id for h in got] == [h.memory.id for h in want], (query, mode)
                assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=TOLERANCE)
    finally:
        reference.close()


def test_the_query_weight_is_the_same_asked_with_no_memory(backend: Backend) -> None:
    """Keyword mode asks the query's IDF weight with a coverage of no memory (the terms' statistics
    only): the same weight as a coverage of a match gives."""
    memories = _memories(backend, [*BOBS, *SHARED])
    for query in QUERIES:
        top = memories.search(query, k=1, mode="keyword")[0].memory.id
        alone = backend.keyword_coverage(query, [], 0.2)
        assert alone.shares == {}
        assert alone.weight > 0
        assert alone.weight == pytest.approx(backend.keyword_coverage(query, [top], 0.2).weight)
