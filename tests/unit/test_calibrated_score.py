"""The shown score (issue #48): the ranking score mapped to a relevance in [0, 1] by a monotone map,
which never changes the ranking (``core/search/calibration.py``), over random pools through the
product's own ``fuse.rank``."""

from __future__ import annotations

import itertools
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import remem
from remem.backends.base import TurnTime
from remem.core.search import calibration, fuse
from remem.core.search.pool import Candidate, Pool
from remem.testing import FAKE_DIM, FakeEmbedder
from remem.types import Lane, ModelInfo, SearchMode

MODES = (SearchMode.HYBRID, SearchMode.VECTOR, SearchMode.KEYWORD)
_COSINE = st.floats(-0.2, 1.0, allow_nan=False)
_BM25 = st.floats(0.01, 30.0, allow_nan=False)


@st.composite
def pools(draw: st.DrawFn, mode: SearchMode) -> Pool:
    """A pool as a search in ``mode`` gathers one: memories in its lanes, some turns of a
    conversation, some from the query's window, some holding the query as a phrase, some the model
    cannot read."""
    size = draw(st.integers(1, 25))
    candidates = []
    vector_place = keyword_place = 0
    for mid in range(1, size + 1):
        cosine = None if mode is SearchMode.KEYWORD else draw(st.none() | _COSINE)
        bm25 = None if mode is SearchMode.VECTOR else draw(st.none() | _BM25)
        if cosine is None and bm25 is None:
            cosine, bm25 = (None, draw(_BM25)) if mode is SearchMode.KEYWORD else (draw(_COSINE), None)
        vector_place += cosine is not None
        keyword_place += bm25 is not None
        turn = None
        if draw(st.booleans()):
            when = datetime(2024, 5, 1 + mid % 5, tzinfo=timezone.utc).isoformat()
            turn = TurnTime(None, "chat", when, draw(st.sampled_from(["Jon", "Gina"])))
        candidates.append(
            Candidate(
                mid,
                None if cosine is None else Lane(vector_place, cosine),
                None if bm25 is None else Lane(keyword_place, bm25),
                draw(st.floats(0.0, 1.0)),
                turn,
                draw(st.booleans()) and draw(st.booleans()),
                draw(st.booleans()),
                draw(st.booleans()) and draw(st.booleans()),
            )
        )
    weight = draw(st.none() | st.floats(0.5, 40.0))
    return Pool(tuple(candidates), weight, frozenset(draw(st.sets(st.sampled_from(["Jon", "Gina"])))), True)


@settings(max_examples=300, deadline=None)
@given(st.data(), st.sampled_from(MODES))
def test_the_shown_score_is_in_0_1_never_rises_down_the_ranking_and_keeps_its_order(
    data: st.DataObject, mode: SearchMode
) -> None:
    pool = data.draw(pools(mode))
    ranked = fuse.rank(pool, mode)
    basis = calibration.basis_of(pool, mode)
    shown = calibration.relevances(ranked, basis, mode, "all-minilm-l6-v2")
    assert len(shown) == len(ranked) and all(0.0 <= s <= 1.0 for s in shown)
    assert all(a >= b for a, b in itertools.pairwise(shown))
    # Before the floor that keeps the list from rising, the map itself is monotone in the ranking
    # score wherever the ranking follows it (no phrase or script rule moved a memory); each hit's
    # calibration gives its shown score from its terms.
    chosen = calibration.maps_for("all-minilm-l6-v2")[mode]
    pairs = zip(calibration.places([r.score for r in ranked]), ranked, shown, strict=True)
    made = [calibration.calibration(r, n, s, basis, mode) for n, r, s in pairs]
    raw = [chosen.relevance(c.cosine, c.keyword, c.rank) for c in made]
    assert all(score >= one - 1e-12 for score, one in zip(shown, raw, strict=True))
    for i, (a, b) in enumerate(itertools.pairwise(ranked)):
        if a.score >= b.score:
            assert raw[i] >= raw[i + 1] - 1e-12
        if a.lifts == b.lifts == ():  # nothing moved either: the shown score is the map's
            assert shown[i] == pytest.approx(raw[i]) or shown[i] == pytest.approx(shown[i + 1])


def test_a_lone_hit_is_put_back_into_its_own_lanes_units() -> None:
    """A pool of one: its fused z-score is 0 whatever it scored; the terms are its own cosine and
    BM25 per unit of the query's weight, so a strong lone hit shows a high score, a weak one a low."""
    for cosine, bm25, low in ((0.9, 9.0, False), (0.05, 0.3, True)):
        pool = Pool((Candidate(1, Lane(1, cosine), Lane(1, bm25), 1.0),), weight=10.0)
        ranked = fuse.rank(pool, SearchMode.HYBRID)
        basis = calibration.basis_of(pool, SearchMode.HYBRID)
        (score,) = calibration.relevances(ranked, basis, SearchMode.HYBRID, None)
        shown = calibration.calibration(ranked[0], 1, score, basis, SearchMode.HYBRID)
        assert ranked[0].score == 0.0
        assert (shown.cosine, shown.keyword) == (pytest.approx(cosine), pytest.approx(bm25 / 10.0))
        assert (shown.relevance < 0.2) if low else (shown.relevance > 0.5)


def test_a_two_hit_pool_gets_each_its_own_cosine_back() -> None:
    """Before, a two-hit pool showed ±1 whatever the hits; now each shows what its own lanes say."""
    pool = Pool(
        (Candidate(1, Lane(1, 0.8), Lane(1, 6.0)), Candidate(2, Lane(2, 0.2), Lane(2, 1.0))), weight=8.0
    )
    ranked = fuse.rank(pool, SearchMode.HYBRID)
    assert [r.score for r in ranked] == pytest.approx([1.0, -1.0])
    basis = calibration.basis_of(pool, SearchMode.HYBRID)
    scores = calibration.relevances(ranked, basis, SearchMode.HYBRID, None)
    first, second = (
        calibration.calibration(r, n, s, basis, SearchMode.HYBRID)
        for n, (r, s) in enumerate(zip(ranked, scores, strict=False), 1)
    )
    assert (first.cosine, second.cosine) == (pytest.approx(0.8), pytest.approx(0.2))
    assert (first.keyword, second.keyword) == (pytest.approx(6.0 / 8.0), pytest.approx(1.0 / 8.0))
    assert 0.0 < second.relevance < first.relevance < 1.0


def test_a_model_without_its_own_maps_uses_the_bundled_models() -> None:
    assert calibration.maps_for("bge-small-en-v1.5") is calibration.BUNDLED
    assert calibration.maps_for(None) is calibration.BUNDLED
    for maps in calibration.MAPS.values():
        assert set(maps) == set(MODES)
        assert all(m.cosine >= 0 and m.keyword >= 0 and m.rank >= 0 for m in maps.values())


def test_a_store_of_multilingual_e5_small_shows_scores_by_its_own_maps(tmp_path: Path) -> None:
    """Its cosines sit near 0.85, not the bundled model's 0.3: its store is scored by the maps fitted
    on its own hits (``bench/calibrate.py --model multilingual-e5-small``; keyword mode, BM25 alone,
    fitted as the bundled model's), while a store of a model without its own maps keeps the bundled
    model's; the order is the same."""
    e5 = calibration.maps_for("multilingual-e5-small")
    assert e5 is calibration.MAPS["multilingual-e5-small"] and e5 is not calibration.BUNDLED
    assert all(e5[m] != calibration.BUNDLED[m] for m in (SearchMode.HYBRID, SearchMode.VECTOR))
    texts = [f"note {i}: the weekly review of topic {i} went fine" for i in range(8)]
    texts += ["bob rotates the deploy key every ninety days", "bob likes green tea"]
    found = {}
    for name, model in (("e5", "multilingual-e5-small"), ("other", "fake-bag-of-words")):
        info = ModelInfo(model, FAKE_DIM, "mean", "f" * 64)
        with remem.open(tmp_path / name, embedder=FakeEmbedder(info)) as memories:
            memories.add_many([remem.NewMemory(t) for t in texts])
            found[name] = {m: memories.search("deploy key rotation", k=5, mode=m) for m in MODES}
    for mode in MODES:
        hits, others = found["e5"][mode], found["other"][mode]
        assert [h.memory.text for h in hits] == [h.memory.text for h in others] and hits
        for maps, shown in ((e5, hits), (calibration.BUNDLED, others)):
            for hit in shown:
                terms = hit.calibration
                assert terms is not None
                raw = maps[mode].relevance(terms.cosine, terms.keyword, terms.rank)
                assert hit.score >= raw - 1e-12  # never below its map (a list never rising)
        first = hits[0].calibration
        assert first is not None
        assert hits[0].score == pytest.approx(e5[mode].relevance(first.cosine, first.keyword, first.rank))
        if e5[mode] != calibration.BUNDLED[mode]:
            assert hits[0].score != pytest.approx(others[0].score)


def test_non_increasing_raises_a_value_to_the_largest_after_it() -> None:
    assert calibration.non_increasing([0.2, 0.6, 0.5, 0.1, 0.3]) == [0.6, 0.6, 0.5, 0.3, 0.3]
    assert calibration.non_increasing([]) == []


def test_memories_tied_on_the_ranking_score_show_one_score_whatever_their_order() -> None:
    """Two memories of one BM25 (PostgreSQL's float sums make them differ in the 16th digit, so
    their order varies between a long-lived and a fresh store) showed 0.0199 and 0.0180 by their
    places; now a tie shares the mean of its places and shows one score."""
    assert calibration.places([2.0, 1.0, 1.0 + 1e-15, 1.0 - 1e-15, 0.5]) == [1.0, 3.0, 3.0, 3.0, 5.0]
    for first, second in ((1.0, 1.0 + 1e-15), (1.0 + 1e-15, 1.0)):
        candidates = (
            Candidate(1, None, Lane(1, 3.0)),
            Candidate(2, None, Lane(2, first)),
            Candidate(3, None, Lane(3, second)),
        )
        pool = Pool(candidates, weight=4.0)
        ranked = fuse.rank(pool, SearchMode.KEYWORD)
        basis = calibration.basis_of(pool, SearchMode.KEYWORD)
        shown = calibration.relevances(ranked, basis, SearchMode.KEYWORD, None)
        assert shown[0] > shown[1] == pytest.approx(shown[2], abs=1e-12)
