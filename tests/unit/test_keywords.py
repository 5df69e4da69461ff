"""The keyword lane: analyzer, FTS5 query building (fuzzed), BM25 through the store, z-score fusion."""

from __future__ import annotations

import math
import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import FAKE_MODEL, fake_vector, search
from remem import Filters, Lane, NewMemory, SearchMode
from remem.backends.analyzer import analyze, term_queries
from remem.backends.base import Coverage
from remem.backends.local import LocalBackend, fts
from remem.core.search.fuse import COSINE_SPREAD_FLOOR, KEYWORD_SPREAD_FLOOR, VECTOR_WEIGHT, fuse, rank
from remem.core.search.pool import FULL_COVERAGE, Pool
from remem.core.search.query import read


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Upgraded numpy==1.26.4.", {"numpy", "1.26.4", "upgraded"}),
        ("missing libcublas.so.12!", {"libcublas.so.12", "libcublas", "missing"}),
        ("see /etc/nginx/nginx.conf)", {"etc/nginx/nginx.conf", "nginx.conf", "nginx", "conf"}),
        ("host 10.0.0.12:8080", {"10.0.0.12:8080", "10.0.0.12", "8080"}),
        ("flag enable_new_checkout_flow", {"enable_new_checkout_flow", "checkout", "flow"}),
        ("chart payments-api-gateway", {"payments-api-gateway", "payments", "gateway"}),
        ("Error E1045: bad", {"e1045", "error", "bad"}),
        ("commit 9F3C2AB1d4", {"9f3c2ab1d4", "commit"}),
    ],
)
def test_identifiers_stay_whole_and_are_split(text: str, expected: set[str]) -> None:
    assert expected <= set(analyze(text))


def test_short_numbers_inside_identifiers_are_not_parts() -> None:
    assert analyze("numpy 1.26.4") == ["numpy", "1.26.4"]
    assert "8080" in analyze("10.0.0.12:8080") and "12" not in analyze("10.0.0.12:8080")
    assert analyze("Postgres 16") == ["postgres", "16"]  # a number on its own is a word


def test_stop_words_and_sentence_punctuation_are_dropped() -> None:
    assert analyze("What is the state of the art?") == ["state", "art"]
    assert analyze("... --- ???") == []


def test_query_terms_are_quoted_with_prefix_for_hashes() -> None:
    assert term_queries("9f3c2ab auth") == ['"9f3c2ab"*', '"auth"']
    assert term_queries("abcdef1") == ['"abcdef1"*']
    assert term_queries("deadbeef") == ['"deadbeef"']  # no digit: an ordinary word, not a hash prefix
    assert term_queries("the of and") == []


@pytest.fixture
def keyword_store(store_dir: Path) -> LocalBackend:
    texts = [
        ("Rolled back 9f3c2ab1d4e5f60718293a4b5c6d7e8f90a1b2c3 after latency doubled", "alice"),
        ("Deploy 4be81c07aa913f2d shipped onboarding emails", "bob"),
        ("The importer fails with error E1045 on a byte-order mark", "alice"),
        ("Pinned numpy 1.26.4 because 2.0 broke pickles", "bob"),
        ("Prometheus scrapes 10.0.0.12 on port 9090", "alice"),
        ("The read replica answers on 10.0.4.17", "bob"),
        ("Container crashed: libcublas.so.12 missing", "alice"),
        ("The runners were running; one run failed", "bob"),
    ]
    store = LocalBackend.open(store_dir, create=True)
    memories = [NewMemory(text=text, user=user) for text, user in texts]
    vectors = np.vstack([fake_vector(m.text) for m in memories])
    store.add_many(memories, vectors, FAKE_MODEL)
    return store


@pytest.mark.parametrize(
    ("query", "expected_id"),
    [
        ("9f3c2ab", 1),
        ("4be81c07aa913f2d", 2),
        ("E1045", 3),
        ("numpy 1.26.4", 4),
        ("1.26.4", 4),
        ("10.0.0.12", 5),
        ("10.0.4.17", 6),
        ("libcublas.so.12", 7),
        ("runs", 8),
    ],
)
def test_keyword_search_puts_the_identifier_first(
    keyword_store: LocalBackend, query: str, expected_id: int
) -> None:
    hits = search(keyword_store, query, None, 3, Filters(), mode=SearchMode.KEYWORD).hits
    assert hits[0].memory.id == expected_id
    assert hits[0].calibration is not None and hits[0].vector is None
    assert hits[0].keyword == Lane(1, hits[0].calibration.ranking)


def test_stemming_matches_word_variants(keyword_store: LocalBackend) -> None:
    for word in ("run", "running", "runners"):
        assert [
            h.memory.id for h in search(keyword_store, word, None, 5, Filters(), mode=SearchMode.KEYWORD).hits
        ] == [8]


def test_keyword_lane_applies_filters(keyword_store: LocalBackend) -> None:
    assert search(keyword_store, "E1045", None, 5, Filters(user="bob"), mode=SearchMode.KEYWORD).hits == []
    hits = search(
        keyword_store, "10.0.0.12 10.0.4.17", None, 5, Filters(user="bob"), mode=SearchMode.KEYWORD
    ).hits
    assert hits[0].memory.id == 6
    assert {h.memory.user for h in hits} == {"bob"}


def test_keyword_index_is_rebuilt_when_the_analyzer_changes(
    keyword_store: LocalBackend, store_dir: Path
) -> None:
    keyword_store.close()
    with sqlite3.connect(store_dir / "memories.sqlite3") as conn:
        conn.execute("DELETE FROM memories_fts")
        conn.execute("UPDATE store_meta SET value = 'old' WHERE key = 'keyword_analyzer'")
    with LocalBackend.open(store_dir, create=False) as reopened:
        assert search(reopened, "E1045", None, 1, Filters(), mode=SearchMode.KEYWORD).hits[0].memory.id == 3


def test_the_keyword_tables_row_count_follows_adds_forgets_and_rebuilds(
    keyword_store: LocalBackend, store_dir: Path
) -> None:
    """The count BM25's IDF uses (FTS5's averages record) is the memories' count, also past the
    one-byte varints (> 127 rows) and after a rebuild."""
    conn = sqlite3.connect(store_dir / "memories.sqlite3")
    assert fts.row_count(conn) == 8
    more = [NewMemory(text=f"note number {i} about subject {i * 7}") for i in range(300)]
    keyword_store.add_many(more, np.vstack([fake_vector(m.text) for m in more]), FAKE_MODEL)
    keyword_store.forget([1, 2, 3])
    assert fts.row_count(conn) == 305 == conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    with conn:
        fts.rebuild(conn)
    assert fts.row_count(conn) == 305
    empty = sqlite3.connect(":memory:")
    empty.execute(fts.CREATE_TABLE)
    assert fts.row_count(empty) == 0


FTS_SYNTAX = st.sampled_from(
    ['"', "*", "-", ":", "NEAR", "NEAR(", "AND", "OR", "NOT", "(", ")", "^", "+", "{", "}"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(FTS_SYNTAX, st.text(max_size=12)), max_size=12))
def test_keyword_search_never_interprets_user_text_as_a_query_language(
    keyword_store: LocalBackend, parts: list[str]
) -> None:
    query = " ".join(parts)
    hits = search(keyword_store, query, None, 5, Filters(), mode=SearchMode.KEYWORD).hits
    assert all(hit.score > 0 for hit in hits)


def _z(values: dict[int, float], floor: float = 0.0) -> dict[int, float]:
    """Population z-scores, the spread at least ``floor`` (the rule, written out independently)."""
    mean = sum(values.values()) / len(values)
    spread = max(math.sqrt(sum((v - mean) ** 2 for v in values.values()) / len(values)), floor)
    return {mid: (v - mean) / spread for mid, v in values.items()}


def _cosine_floor(cosines: dict[int, float]) -> float:
    """The cosines' spread floor: a share of the pool's mean distance from 1."""
    assert COSINE_SPREAD_FLOOR == 0.06
    return COSINE_SPREAD_FLOOR * (1 - sum(cosines.values()) / len(cosines))


def test_fusion_mixes_the_lanes_z_scores_over_the_pool() -> None:
    fused = fuse([(1, 0.9), (2, 0.8), (3, 0.7)], [(3, 12.0), (4, 5.0)])
    by_id = {r.id: r for r in fused}
    # Memory 4 (no cosine) takes the pool's lowest, 0.7; non-matches 1 and 2 have BM25 0.
    cosine_z = _z({1: 0.9, 2: 0.8, 3: 0.7, 4: 0.7})
    bm25_z = _z({1: 0.0, 2: 0.0, 3: 12.0, 4: 5.0})
    assert VECTOR_WEIGHT == 0.5
    for mid, ranked in by_id.items():
        assert ranked.score == pytest.approx(0.5 * cosine_z[mid] + 0.5 * bm25_z[mid])
    assert [r.id for r in fused] == [3, 1, 2, 4]
    assert by_id[4].vector is None and by_id[4].keyword == Lane(2, 5.0)
    assert by_id[3].vector == Lane(3, 0.7) and by_id[3].keyword == Lane(1, 12.0)
    assert fuse([], []) == []


def test_fusion_keeps_how_far_apart_the_scores_are() -> None:
    # Rank fusion would put 1 (first and second) above 2 (third and first); here 2's BM25 is far ahead.
    fused = fuse([(1, 0.62), (3, 0.61), (2, 0.60), (4, 0.2)], [(2, 30.0), (1, 1.0)])
    assert [r.id for r in fused][:2] == [2, 1]


def test_a_weak_match_counts_in_proportion_and_bm25s_spread_has_a_floor() -> None:
    vector = [(1, 0.9), (2, 0.5), (3, 0.3), (4, 0.1)]
    keyword = [(3, 6.0), (4, 6.0)]
    # 3 covers half the query's weight (counts whole), 4 a tenth (counts half: 0.1 / FULL_COVERAGE).
    coverage = Coverage({3: 0.2, 4: 0.1}, weight=10.0)
    by_id = {r.id: r for r in fuse(vector, keyword, coverage=coverage)}
    assert FULL_COVERAGE == 0.2 and KEYWORD_SPREAD_FLOOR == 0.08
    evidence = {1: 0.0, 2: 0.0, 3: 6.0, 4: 3.0}
    cosine_z = _z(dict(vector), _cosine_floor(dict(vector)))
    bm25_z = _z(evidence, KEYWORD_SPREAD_FLOOR * 10.0)
    assert _z(evidence)[3] == pytest.approx(bm25_z[3])  # spread 2.49 > the floor 0.8: it does not bind
    for mid, ranked in by_id.items():
        assert ranked.score == pytest.approx(0.5 * cosine_z[mid] + 0.5 * bm25_z[mid])
    assert by_id[4].keyword == Lane(2, 6.0)  # the lane still shows the real BM25
    # One weak match among many memories: its z would be large; the floor (0.08 x 100) holds it.
    many = [(mid, 0.5 + mid / 1000) for mid in range(1, 51)]
    lone = fuse(many, [(1, 2.0)], coverage=Coverage({1: 0.2}, weight=100.0))
    assert lone[0].id == 50  # the best cosine, not the lone weak match
    assert {r.id: r for r in lone}[1].score == pytest.approx(
        0.5 * _z(dict(many), _cosine_floor(dict(many)))[1] + 0.5 * (2.0 - 2.0 / 50) / 8.0
    )


def test_a_lone_strong_match_stands_out() -> None:
    # An identifier only one memory holds: the whole query's weight, and nothing else matches.
    many = [(mid, 0.5 + mid / 1000) for mid in range(1, 51)]
    fused = fuse(many, [(7, 9.0)], coverage=Coverage({7: 0.2}, weight=4.0))
    assert fused[0].id == 7
    assert [r.id for r in fuse(many[:2], [])] == [2, 1]  # no match: the cosines alone


def test_cosines_closer_than_their_floor_do_not_outvote_a_match() -> None:
    # Two memories in a narrow filter: 0.23 vs 0.16 is noise (spread 0.035, floor 0.06 x 0.805); the
    # one matching the query's word wins.
    fused = fuse([(45, 0.23), (36, 0.16)], [(36, 3.4)], coverage=Coverage({36: 0.2}, weight=3.0))
    assert [r.id for r in fused] == [36, 45]
    assert fuse([(45, 0.23), (36, 0.16)], [(36, 3.4)])[0].id == 36


def test_fusion_ties_go_to_the_higher_cosine_then_the_smaller_id() -> None:
    tie = fuse([(7, 0.5)], [(8, 3.0), (7, 3.0)])  # 8 takes 7's cosine, and has its BM25: both score 0
    assert [r.score for r in tie] == [0.0, 0.0]
    assert [r.id for r in tie] == [7, 8]  # the one with a cosine first
    assert [r.id for r in fuse([(5, 0.5), (2, 0.5)], [])] == [2, 5]


def test_a_memory_the_model_cannot_read_gets_the_lowest_cosine() -> None:
    fused = fuse([(1, 0.9), (2, 0.3), (3, 0.2)], [], unread={1})
    by_id = {r.id: r for r in fused}
    assert by_id[1].score == pytest.approx(by_id[3].score)  # 0.9 read as 0.2
    assert by_id[1].vector == Lane(1, 0.9)  # its lane still shows the real cosine
    assert [r.id for r in fused] == [2, 3, 1]  # nor does that cosine break the tie


@pytest.mark.parametrize("mode", [SearchMode.HYBRID, SearchMode.KEYWORD])
def test_whole_query_phrase_matches_go_first_each_group_in_its_order(mode: SearchMode) -> None:
    texts = {1: "box main of the team", 2: "the main box is full", 3: "main and box", 4: "a main box again"}
    wanted = read("main box").phrases
    cosines, bm25 = [(1, 0.9), (2, 0.5), (3, 0.4), (4, 0.1)], [(1, 9.0), (2, 5.0), (3, 4.0), (4, 1.0)]
    pool = Pool.of_lanes(cosines if mode is SearchMode.HYBRID else [], bm25)
    marked = tuple(c._replace(phrase=wanted.matches(texts[c.id])) for c in pool.candidates)
    pool = replace(pool, candidates=marked)
    ranked = rank(pool, mode)
    assert [r.id for r in ranked] == [2, 4, 1, 3]
    assert [[lift.name for lift in r.lifts] for r in ranked] == [["phrase"], ["phrase"], [], []]
    assert ranked[2].score > ranked[0].score  # moved ahead, its score unchanged


def test_the_cosine_floor_follows_the_models_scale() -> None:
    # A model whose cosines are squeezed near 0.85 (multilingual-e5-small): a spread of 0.01 is its
    # whole range, and must not be held to the bundled model's scale.
    squeezed = [(1, 0.87), (2, 0.86), (3, 0.85), (4, 0.84)]
    fused = fuse(squeezed, [(4, 2.0), (3, 1.0)], coverage=Coverage({4: 0.2, 3: 0.2}, weight=10.0))
    cosine_z = _z(dict(squeezed))  # the floor, 0.06 x 0.145, is below the spread 0.011: unheld
    assert _cosine_floor(dict(squeezed)) < 0.0112
    evidence_z = _z({1: 0.0, 2: 0.0, 3: 1.0, 4: 2.0}, KEYWORD_SPREAD_FLOOR * 10.0)
    assert [r.score for r in fused] == pytest.approx(
        sorted((0.5 * cosine_z[m] + 0.5 * evidence_z[m] for m in cosine_z), reverse=True)
    )
