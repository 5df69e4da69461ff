"""The local vector lane under filters: whether the best of the whole index are probed first
(``lanes._worth_probing``: unless a listing in the same state found the filters select too few
vectors) changes which rows are read, never the top."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from helpers import FAKE_MODEL
from remem import Filters, NewMemory
from remem.backends.local import LocalBackend, lanes

DIM = FAKE_MODEL.dim


@pytest.fixture
def store(store_dir: Path) -> Iterator[LocalBackend]:
    """600 memories: tags on a half, a tenth and a hundredth of them, two users, random vectors
    (some tied)."""
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(600, DIM)).astype(np.float32)
    vectors[::7] = vectors[0]  # ties
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    memories = [
        NewMemory(
            f"memory {i}",
            user=("ann", "bob")[i % 2],
            tags=tuple(tag for tag, every in (("half", 2), ("tenth", 10), ("few", 100)) if i % every == 0),
        )
        for i in range(600)
    ]
    with LocalBackend.open(store_dir, create=True) as backend:
        backend.add_many(memories, [v.reshape(1, -1) for v in vectors], FAKE_MODEL)
        yield backend


FILTERS = [Filters(tags=("half",)), Filters(tags=("tenth",)), Filters(tags=("few",)), Filters(user="ann")]


@pytest.mark.parametrize("k", [1, 10, 100, 300])
def test_the_top_is_the_same_probed_or_listed(
    store: LocalBackend, k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(k)
    queries = [np.asarray([rng.gauss(0, 1) for _ in range(DIM)], dtype=np.float32) for _ in range(5)]
    for filters in FILTERS:
        for vector in queries:
            chosen = store.vector_lane().top(vector, k, filters)
            for probe in (True, False):
                monkeypatch.setattr(lanes, "_worth_probing", lambda *_, probe=probe: probe)
                assert store.vector_lane().top(vector, k, filters) == chosen, (filters, probe)
            monkeypatch.undo()


def test_a_listing_tells_the_next_search_in_the_state_to_list(store: LocalBackend) -> None:
    vector = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    counts, conn = store.records.keyword_counts, store.records.conn
    listed = []
    for asked in FILTERS:
        filters = store.records.needed_filters(asked)  # what the lane reads (as ``top`` does)
        before = counts.listed(counts.stamp(conn), filters)
        first = store.vector_lane().top(vector, 100, asked)
        listed.append(counts.listed(counts.stamp(conn), filters))
        assert before is None and store.vector_lane().top(vector, 100, asked) == first
    assert listed[1:3] == [60, 6]  # the tenth's and the few's vectors (a probe could not decide them)
    store.add_many([NewMemory("one more", tags=("tenth",))], [vector.reshape(1, -1)], FAKE_MODEL)
    filters = store.records.needed_filters(FILTERS[1])
    assert counts.listed(counts.stamp(conn), filters) is None  # another state
