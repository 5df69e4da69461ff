"""When remem says that a store under ``auto`` has outgrown its exact index (``core/growth.py``):
the rule on its own, and through the public API (notes after a write, ``index_advice``, doctor's
advice), with the size lowered: no test adds 50,000 memories."""

from __future__ import annotations

from pathlib import Path

import pytest

import remem
from remem.backends.local import settings
from remem.backends.shapes import IndexState
from remem.core.growth import advice, crossed, marks
from remem.testing import FakeEmbedder


def _state(vectors: int, requested: str = "auto", kind: str = "exact") -> IndexState:
    return IndexState(requested=requested, kind=kind, vectors=vectors, hnsw_from=100)


def test_marks_count_the_size_and_its_doublings() -> None:
    assert [marks(n, 100) for n in (0, 99, 100, 199, 200, 399, 400, 1_000_000)] == [0, 0, 1, 1, 2, 2, 3, 14]


@pytest.mark.parametrize(
    ("state", "due"),
    [
        (_state(99), False),
        (_state(100), True),
        (_state(10**6, requested="exact"), False),
        (_state(10**6, requested="hnsw", kind="exact"), False),
        (_state(10**6, kind="hnsw"), False),
        (None, False),
    ],
)
def test_advice_is_due_only_for_an_exact_index_under_auto_at_the_size(
    state: IndexState | None, due: bool
) -> None:
    said = advice(state)
    assert (said is not None) is due
    if said is not None:
        assert said.startswith("The store holds 100 vectors: from 100 up") and "`remem reindex`" in said


@pytest.mark.parametrize(
    ("before", "after", "said"),
    [
        (99, 100, True),
        (100, 101, False),
        (150, 199, False),
        (199, 200, True),
        (0, 1000, True),
        (None, 100, True),
    ],
)
def test_a_write_says_it_when_it_crosses_a_mark(before: int | None, after: int, said: bool) -> None:
    was = None if before is None else _state(before)
    assert (crossed(was, _state(after)) is not None) is said


def test_through_the_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings, "AUTO_HNSW_THRESHOLD", 3)
    with remem.open(tmp_path / "store", create=True, embedder=FakeEmbedder()) as memories:
        memories.add("one")
        memories.add_many(["two"])
        assert memories.index_advice() is None and memories.doctor().advice == ()
        before = len(memories.notes)
        memories.add("three", embed=False)  # waits for its vector: the count has not grown
        assert len(memories.notes) == before
        assert memories.embed_pending() == 1
        assert [n for n in memories.notes[before:] if "`remem reindex`" in n] == [memories.index_advice()]
        assert memories.doctor().advice == (memories.index_advice(),) and memories.doctor().ok
        memories.add("four")
        assert len(memories.notes) == before + 1  # said once, not at every write past it
        memories.reindex()
        assert memories.index_advice() is None and memories.doctor().advice == ()
        assert memories.stats().index is not None and memories.stats().index.startswith("hnsw")
