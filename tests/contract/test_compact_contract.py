"""``compact`` (`remem compact`): the vector index written level with the database where it is a
checkpoint that lags (the local store), nothing to do on PostgreSQL; a search ranks the same
before and after it, bit for bit, and a second compact has nothing to do."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from helpers import vector_search
from remem.backends.local.store import LocalBackend
from remem.testing import FAKE_MODEL, fake_vector
from remem.types import Filters, NewMemory

if TYPE_CHECKING:
    from remem.backends.base import Backend


def test_compact_changes_no_ranking_and_then_has_nothing_to_do(backend: Backend) -> None:
    texts = [f"memory {n} about topic {n % 5} word{n}" for n in range(40)]
    backend.add_many([NewMemory(t) for t in texts], np.stack([fake_vector(t) for t in texts]), FAKE_MODEL)
    backend.compact()
    backend.add_many(
        [NewMemory("one more about topic 2")], [fake_vector("one more about topic 2")], FAKE_MODEL
    )
    backend.forget([3, 4])
    queries = [fake_vector(f"topic {n} memory") for n in range(5)]
    before = [[(h.memory.id, h.score) for h in vector_search(backend, q, 10, Filters())] for q in queries]
    compacted = backend.compact()
    assert compacted.vectors == (3 if isinstance(backend, LocalBackend) else 0)  # one added, two forgotten
    assert compacted.keyword_heads == 0  # a small store's keyword lane scores every match
    after = [[(h.memory.id, h.score) for h in vector_search(backend, q, 10, Filters())] for q in queries]
    assert after == before
    assert not backend.compact()
