"""The BEIR benchmark's metrics (bench/beir.py) on tiny rankings computed by hand."""

from __future__ import annotations

import math

import pytest

from helpers import bench_module

beir = bench_module("beir")


def test_perfect_ranking_scores_one() -> None:
    relevance = {"a": 1, "b": 1}
    ranked = ["a", "b", "x", "y"]
    assert beir.ndcg_at_k(ranked, relevance, 10) == pytest.approx(1.0)
    assert beir.recall_at_k(ranked, relevance, 10) == 1.0
    assert beir.recall_at_k(ranked, relevance, 100) == 1.0


def test_perfect_graded_ranking_scores_one() -> None:
    assert beir.ndcg_at_k(["a", "b"], {"a": 2, "b": 1}, 10) == pytest.approx(1.0)


def test_mixed_ranking_by_hand() -> None:
    # Relevant at ranks 2 and 4: DCG = 1/log2(3) + 1/log2(5); ideal = 1/log2(2) + 1/log2(3).
    relevance = {"a": 1, "b": 1}
    ranked = ["x", "a", "y", "b"]
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert expected == pytest.approx(0.650921, abs=1e-6)
    assert beir.ndcg_at_k(ranked, relevance, 10) == pytest.approx(expected)
    assert beir.recall_at_k(ranked, relevance, 2) == pytest.approx(0.5)
    assert beir.recall_at_k(ranked, relevance, 10) == 1.0


def test_graded_gain_is_linear() -> None:
    # trec_eval's gain is the grade itself (not 2^grade - 1): (1 + 2/log2 3) / (2 + 1/log2 3).
    assert beir.ndcg_at_k(["b", "a"], {"a": 2, "b": 1}, 10) == pytest.approx(0.859719, abs=1e-6)


def test_nothing_relevant_retrieved_scores_zero() -> None:
    relevance = {"a": 1, "b": 0}
    ranked = ["x", "b", "y"]
    assert beir.ndcg_at_k(ranked, relevance, 10) == 0.0
    assert beir.recall_at_k(ranked, relevance, 10) == 0.0


def test_cutoffs() -> None:
    # A relevant document just below the cutoff does not count.
    ranked = [f"x{i}" for i in range(10)] + ["a"]
    assert beir.ndcg_at_k(ranked, {"a": 1}, 10) == 0.0
    assert beir.recall_at_k(ranked, {"a": 1}, 10) == 0.0
    assert beir.recall_at_k(ranked, {"a": 1}, 100) == 1.0
    # The ideal ranking is cut at k too: 10 of 12 relevant documents on top is a perfect nDCG@10.
    relevance = {f"r{i}": 1 for i in range(12)}
    assert beir.ndcg_at_k([f"r{i}" for i in range(10)], relevance, 10) == pytest.approx(1.0)
    assert beir.recall_at_k([f"r{i}" for i in range(10)], relevance, 10) == pytest.approx(10 / 12)


def test_zero_grades_are_not_relevant() -> None:
    relevance = {"a": 1, "b": 1, "c": 1, "d": 0}
    assert beir.recall_at_k(["a", "x", "d", "b"], relevance, 2) == pytest.approx(1 / 3)
    assert beir.recall_at_k(["a", "x", "d", "b"], relevance, 10) == pytest.approx(2 / 3)


def test_evaluate_averages_over_judged_queries_with_a_ranking() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}}
    rankings = {"q1": ["a", "x"], "q2": ["x", "y"], "unjudged": ["a"]}
    metrics = beir.evaluate(qrels, rankings)  # q1 perfect, q2 nothing found; q3, "unjudged" left out
    assert metrics == {"nDCG@10": pytest.approx(0.5), "Recall@10": 0.5, "Recall@100": 0.5}
