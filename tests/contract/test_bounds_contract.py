"""Near-zero-IDF terms on both back-ends (``remem.backends.bounds``, its thresholds made small here):
left out of the ranking query, they move scores by less than 2.2 × their IDF and so only the order of
memories that close; memories holding only them rank after the others, among the newest of them."""

from __future__ import annotations

import random

import pytest
from test_backend_contract import add

from remem import Filters, NewMemory
from remem.backends import bounds
from remem.backends.base import Backend, Scored

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda"]
#: Large enough that "note", held by all 60 memories, is near zero on PostgreSQL too (Lucene's IDF
#: ln(1 + 0.5 / 60.5) = 0.008; FTS5 gives it 1e-6).
NEAR_ZERO = 0.01


@pytest.fixture
def noted(backend: Backend) -> Backend:
    """60 memories of two users, each holding "note" (some twice), over a skewed vocabulary."""
    rng = random.Random(3)
    memories = []
    for i in range(60):
        words = [rng.choice(WORDS[: 2 + i % len(WORDS)]) for _ in range(rng.randint(2, 13))]
        words.insert(rng.randint(0, len(words)), "note")
        words += ["note"] if i % 7 == 0 else []
        memories.append(NewMemory(" ".join(words) + f" item{i}", user=("ann", "bob")[i % 2]))
    add(backend, *memories)
    return backend


def _bounded(monkeypatch: pytest.MonkeyPatch, window: int) -> None:
    monkeypatch.setattr(bounds, "COMMON_HOLDERS", 0)
    monkeypatch.setattr(bounds, "NEAR_ZERO_IDF", NEAR_ZERO)
    monkeypatch.setattr(bounds, "WINDOW", window)


def _near(got: list[Scored], expected: list[Scored], unbounded: dict[int, float]) -> None:
    """``got`` is ``expected`` but for memories within the bound of each other, each score within it."""
    bound = 2.2 * NEAR_ZERO
    assert len(got) == len(expected) and got == sorted(got, key=lambda pair: (-pair[1], pair[0]))
    for place, (mid, score) in enumerate(got):
        assert score == pytest.approx(unbounded[mid], abs=bound)
        if mid != expected[place][0]:  # only a near tie moves
            assert expected[place][1] == pytest.approx(unbounded[mid], abs=2 * bound)


@pytest.mark.parametrize("k", [1, 5, 20, 100])
@pytest.mark.parametrize(
    ("query", "filters", "among"),
    [
        ("note", Filters(), None),
        ("note", Filters(user="bob"), None),
        ("note", Filters(), range(1, 61, 3)),
        ("note theta iota", Filters(user="ann"), None),
        ("note item3 item17", Filters(), None),
        ("note item3 item17", Filters(), range(2, 40)),
    ],
)
def test_leaving_a_near_zero_idf_term_out_moves_only_near_ties(
    noted: Backend, monkeypatch: pytest.MonkeyPatch, query: str, filters: Filters, among: range | None, k: int
) -> None:
    ids = None if among is None else list(among)
    expected = noted.keyword_top(query, filters, k, ids)
    unbounded = dict(noted.keyword_top(query, filters, 100, ids))
    _bounded(monkeypatch, window=1_000)
    got = noted.keyword_top(query, filters, k, ids)
    _near(got, expected, unbounded)
    if query == "note":  # nothing else to rank by: the same BM25 as before, to the bit
        assert got == expected


def test_memories_holding_only_near_zero_idf_terms_rank_among_the_newest(
    noted: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bounded(monkeypatch, window=8)
    assert sorted(mid for mid, _ in noted.keyword_top("note", Filters(), 20)) == list(range(53, 61))
    assert sorted(mid for mid, _ in noted.keyword_top("note", Filters(user="bob"), 20)) == list(
        range(46, 61, 2)
    )
    within = noted.keyword_top("note", Filters(), 20, among=[1, 2, 55])  # the window is not among's
    assert within == [pair for pair in noted.keyword_top("note", Filters(), 20) if pair[0] == 55]
    top = [mid for mid, _ in noted.keyword_top("note item3", Filters(), 10)]
    assert top[0] == 4 and set(top[1:]) <= set(range(53, 61))  # its match first, then the window
