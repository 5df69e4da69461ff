"""Filtered searches through pgvector's HNSW index still fill ``k``: with iterative index scans a
1 % filter returns 10 of 10, equal to brute force; without them the same walk comes back short."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from remem.backends.postgres.lanes import PostgresVectorLane
from remem.backends.postgres.settings import IndexSettings
from remem.backends.postgres.store import PostgresBackend
from remem.testing import FAKE_MODEL
from remem.types import Filters, NewMemory

COUNT, RARE = 3000, 30  # 1 % of the memories belong to the rare user


@pytest.fixture
def store(postgres_url: str) -> Iterator[tuple[PostgresBackend, np.ndarray]]:
    rng = np.random.default_rng(7)
    centers = rng.normal(size=(20, FAKE_MODEL.dim))
    vectors = centers[rng.integers(0, 20, COUNT)] + 0.35 * rng.normal(size=(COUNT, FAKE_MODEL.dim))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    users = ["rare" if i % (COUNT // RARE) == 0 else "common" for i in range(COUNT)]
    memories = [NewMemory(f"memory {i}", user=user) for i, user in enumerate(users)]
    backend = PostgresBackend.open(postgres_url, create=True)
    ids = [r.id for r in backend.add_many(memories, [v.reshape(1, -1) for v in vectors], FAKE_MODEL)]
    backend.exact_candidates = 0  # always walk the HNSW graph
    try:
        yield backend, np.array([ids[i] for i in range(COUNT) if users[i] == "rare"]), vectors, users  # type: ignore[misc]
    finally:
        backend.close()


def _brute_force(vectors: np.ndarray, users: list[str], ids: np.ndarray, query: np.ndarray) -> list[int]:
    rare = np.array([i for i, user in enumerate(users) if user == "rare"])
    scores = vectors[rare] @ query
    return [int(ids[j]) for j in np.argsort(-scores, kind="stable")[:10]]


def test_a_one_percent_filter_returns_ten_equal_to_brute_force(store) -> None:  # type: ignore[no-untyped-def]
    backend, rare_ids, vectors, users = store
    lane = backend.vector_lane()
    short_without_iterative = 0
    for seed in range(5):
        query = vectors[seed * 97] + 0.1 * np.random.default_rng(seed).normal(size=FAKE_MODEL.dim)
        query = (query / np.linalg.norm(query)).astype(np.float32)
        top = lane.top(query, 10, Filters(user="rare"))
        assert [mid for mid, _ in top] == _brute_force(vectors, users, rare_ids, query)
        for iterative in (True, False):  # SET LOCAL: each walk in a transaction of its own
            with backend.session.transaction() as cursor:
                cursor.execute("SET LOCAL enable_sort = off")  # the planner must walk the graph
                walker = PostgresVectorLane(
                    backend.session, backend.s, replace(lane.settings, iterative=iterative, ef_search=40)
                )
                found = len(walker.walk(cursor, query, 10, Filters(user="rare")))
            if iterative:
                assert found == 10  # the walk alone (no exact fallback) fills k
            else:
                short_without_iterative += found < 10
    assert short_without_iterative == 5  # what iterative scans fix: a plain walk comes back short


def test_an_older_pgvector_warns_and_still_fills_k(store) -> None:  # type: ignore[no-untyped-def]
    backend, rare_ids, vectors, users = store
    old = PostgresBackend(backend.session, (0, 7, 4))  # as if the server had pgvector 0.7.4
    old.exact_candidates = 0
    assert old.warnings == [
        "pgvector 0.7.4 has no iterative index scans (0.8+): filtered searches widen ef_search instead"
    ]
    old.reindex(None, (None, None, 40), False)  # a narrow beam of its own: widened for the walk
    lane = old.vector_lane()
    assert not lane.settings.iterative and lane.settings.ef_search == 400
    query = vectors[5]
    assert [mid for mid, _ in lane.top(query, 10, Filters(user="rare"))] == _brute_force(
        vectors, users, rare_ids, query
    )


def test_a_large_k_walks_past_the_ef_search_bound(store) -> None:  # type: ignore[no-untyped-def]
    backend, _, vectors, _ = store
    found = backend.vector_lane().top(vectors[0], 1500, Filters())  # hnsw.ef_search stops at 1000
    assert len(found) == 1500 and found[0][1] > 0.99


def test_a_new_store_records_the_graph_settings_it_was_built_with(postgres_url: str) -> None:
    """The first vector builds the graph with the defaults of the day and records them in the store:
    a later remem with other defaults reads the graph's own parameters and beam from there."""
    with PostgresBackend.open(postgres_url, create=True) as backend:
        assert "hnsw_ef_search" not in backend.key_values()
        backend.add_many([NewMemory("the first")], [np.ones((1, FAKE_MODEL.dim), np.float32) / 8], FAKE_MODEL)
        defaults = IndexSettings()
        assert backend.settings == defaults and backend.key_values().items() >= defaults.rows().items()
        assert backend.vector_lane().settings.ef_search == defaults.ef_search == 400
