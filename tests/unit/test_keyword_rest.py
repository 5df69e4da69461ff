"""The local hybrid pool's shortcut for the BM25 of the vector top's memories beyond the keyword top
(``pooled``: the matches past the top read by the keyword lane's own statement): every pool is the
one the primitives alone give, whether the matches past the top fit in ``REST`` or not, under
filters, a window and required phrases."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

import remem
from helpers import FakeEmbedder, fake_vector
from remem import Filters, NewMemory
from remem.backends import pooling
from remem.backends.base import PoolRequest
from remem.backends.local import LocalBackend, fts, keywords, pooled

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


@pytest.fixture
def store(store_dir: Path) -> Iterator[LocalBackend]:
    """120 memories of random words, two users, three tags, half of them turns of a conversation."""
    rng = random.Random(3)
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        memories.add_many(
            NewMemory(
                " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9))),
                user=("ann", "bob")[i % 2],
                tags=(f"t{i % 3}",),
                conversation="talk" if i % 2 else None,
            )
            for i in range(120)
        )
    with LocalBackend.open(store_dir, create=False) as backend:
        yield backend


QUERIES = ["alpha beta", "gamma", "zeta eta theta", "kappa alpha delta", "nothing here", "iota"]
FILTERS = [Filters(), Filters(user="ann"), Filters(tags=("t1",)), Filters(conversation="talk")]


@pytest.mark.parametrize("rest", [0, 5, 400])
@pytest.mark.parametrize("depth", [4, 20])
def test_the_pool_is_the_one_the_primitives_give(
    store: LocalBackend, rest: int, depth: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pooled, "REST", rest)
    known: list[bool] = []
    top_and_rest = keywords.top_and_rest

    def noted(*args: object, **kwargs: object) -> tuple[object, object]:
        found = top_and_rest(*args, **kwargs)  # type: ignore[arg-type]
        known.append(found[1] is not None)
        return found

    monkeypatch.setattr(keywords, "top_and_rest", noted)
    for text in QUERIES:
        for filters in FILTERS:
            request = PoolRequest(text, filters, depth, keyword=True, vector=lambda _, t=text: fake_vector(t))
            with store.snapshot():
                by_primitives = pooling.gather(store, request)
                shortcut = pooling.gather(store, request, pooled.shortcuts(store.records))
            assert shortcut == by_primitives, (text, filters)
    assert any(known) == bool(rest) and (rest == 400 or not all(known))  # both ways taken


def test_the_rest_is_known_only_when_it_fits(store: LocalBackend) -> None:
    conn, counts = store.records.conn, store.records.keyword_counts
    every = keywords.top_and_rest(conn, counts, "alpha", Filters(), 1000)[0]
    assert len(every) > 10
    top, rest = keywords.top_and_rest(conn, counts, "alpha", Filters(), 10, more=len(every))
    assert top == every[:10] and rest == every[10:]
    assert keywords.top_and_rest(conn, counts, "alpha", Filters(), 10, more=len(every) - 10)[1] is None
    assert keywords.top_and_rest(conn, counts, "alpha", Filters(), 10)[1] is None


def test_a_broad_query_reads_no_row_past_its_top(
    store: LocalBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn, counts = store.records.conn, store.records.keyword_counts
    limits: list[int] = []
    search = fts.search

    def noted(conn: object, match: str, filters: Filters, limit: int, among: object = None) -> object:
        limits.append(limit)
        return search(conn, match, filters, limit, among)  # type: ignore[arg-type]

    monkeypatch.setattr(fts, "search", noted)
    held = counts.holders(conn, counts.stamp(conn), "terms : alpha")
    assert keywords.top_and_rest(conn, counts, "alpha", Filters(), 10, more=held - 10)[1] is None
    assert keywords.top_and_rest(conn, counts, "alpha", Filters(), 10, more=200)[1] is not None  # all 120
    assert limits == [10, 210]  # unfiltered, a term held by limit + more memories: the top alone
