"""No vector that is not finite or not of unit length enters a store, by any of its write paths (a
batch add, an edit, vectors given to pending memories, a re-embed): the write is refused with one
line naming the cause and nothing changes. Such vectors come from a damaged model (zeroed weights
give zero vectors, random ones NaN); the same on every back-end."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import numpy as np
import pytest

from remem.errors import EmbedderError
from remem.testing import FAKE_DIM, FAKE_MODEL, fake_vector
from remem.types import Filters, NewMemory

if TYPE_CHECKING:
    from collections.abc import Sequence

    from remem.backends.base import Backend


def _bad(kind: str) -> np.ndarray:
    vector = fake_vector("a damaged model's vector", FAKE_DIM).copy()
    if kind == "nan":
        vector[3] = np.nan
    elif kind == "infinite":
        vector[0] = np.inf
    elif kind == "zero":
        vector[:] = 0.0
    elif kind == "scaled":
        vector *= 2.0
    else:  # a hundredth too long: far beyond float32 rounding
        vector *= 1.01
    return vector.reshape(1, -1)


KINDS = ["nan", "infinite", "zero", "scaled", "slightly-long"]
CAUSE = {"nan": "not finite", "infinite": "not finite"}


def _refused(kind: str) -> AbstractContextManager[object]:
    cause = CAUSE.get(kind, "not of unit length")
    return pytest.raises(
        EmbedderError, match=rf"^the model gave a vector that is {cause}.*nothing was stored"
    )


def _ok(text: str) -> np.ndarray:
    return fake_vector(text, FAKE_DIM).reshape(1, -1)


def _state(backend: Backend) -> tuple[object, ...]:
    ids = backend.candidate_ids(Filters())
    memories = backend.get_many(ids)
    return (
        backend.model,
        [(mid, memories[mid].text) for mid in ids],
        backend.vectors_of_memories(ids),
        backend.pending_count(),
    )


@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_with_a_bad_vector_is_refused_and_changes_nothing(backend: Backend, kind: str) -> None:
    batch = [NewMemory("fine one"), NewMemory("broken one")]
    with _refused(kind):
        backend.add_many(batch, [_ok("fine one"), _bad(kind)], FAKE_MODEL)
    assert backend.model is None and backend.candidate_ids(Filters()) == []  # not even the stamp
    backend.add_many([NewMemory("kept")], [_ok("kept")], FAKE_MODEL)
    before = _state(backend)
    with _refused(kind):
        backend.add_many(batch, [_ok("fine one"), _bad(kind)], FAKE_MODEL)
    assert _state(backend) == before


@pytest.mark.parametrize("kind", KINDS)
def test_an_edit_with_a_bad_vector_is_refused_and_changes_nothing(backend: Backend, kind: str) -> None:
    (added,) = backend.add_many([NewMemory("the original text")], [_ok("the original text")], FAKE_MODEL)
    before = _state(backend)
    with _refused(kind):
        backend.edit(added.id, "an edited text", _bad(kind), FAKE_MODEL)
    assert _state(backend) == before


@pytest.mark.parametrize("kind", KINDS)
def test_a_pending_memory_given_a_bad_vector_stays_pending(backend: Backend, kind: str) -> None:
    backend.add_many([NewMemory("has vectors")], [_ok("has vectors")], FAKE_MODEL)
    (waiting,) = backend.add_pending([NewMemory("waits for its vectors")])
    before = _state(backend)
    items = [(waiting.id, "waits for its vectors", _bad(kind))]
    with _refused(kind):
        backend.attach_vectors(items, FAKE_MODEL)
    with _refused(kind):
        backend.attach_vectors(items, FAKE_MODEL, replace=True)
    assert _state(backend) == before and backend.pending(10) == [(waiting.id, "waits for its vectors")]


@pytest.mark.parametrize("kind", KINDS)
def test_a_reembed_that_gets_a_bad_vector_is_refused_and_swaps_nothing(backend: Backend, kind: str) -> None:
    texts = [f"memory number {n}" for n in range(5)]
    backend.add_many([NewMemory(text) for text in texts], [_ok(text) for text in texts], FAKE_MODEL)
    before = _state(backend)

    def damaged(batch: Sequence[tuple[int, str]]) -> list[np.ndarray]:
        return [_bad(kind) if text == texts[2] else _ok(text) for _, text in batch]

    with _refused(kind):
        backend.reembed(FAKE_MODEL, damaged, None, True)
    assert _state(backend) == before
    report = backend.reembed(FAKE_MODEL, lambda batch: [_ok(text) for _, text in batch], None, True)
    assert report.swapped and _state(backend) == before
