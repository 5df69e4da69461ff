"""The vector index file as a checkpoint: a write commits to SQLite only; readers (another
process's store, a long-lived one's cached index) catch up from the rows added and the deletions
logged since; the file is rewritten once the lag passes its bound (``sync.bound``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import cosine, vector_search
from remem.backends.local import sync
from remem.backends.local.maintenance import reindex
from remem.backends.local.store import LocalBackend
from remem.backends.local.vectors import VectorIndex
from remem.testing import FAKE_DIM, FAKE_MODEL, fake_vector
from remem.types import Filters, NewMemory


def _filled(directory: Path, kind: str, count: int = 60) -> LocalBackend:
    store = LocalBackend.open(directory, create=True)
    texts = [f"memory {n} about topic {n % 7} and word{n}" for n in range(count)]
    store.add_many([NewMemory(t) for t in texts], np.stack([fake_vector(t) for t in texts]), FAKE_MODEL)
    reindex(store.home, kind)
    return store


def _hits(store: LocalBackend, text: str, k: int = 200) -> list[tuple[int, float]]:
    return [(h.memory.id, cosine(h)) for h in vector_search(store, fake_vector(text), k, Filters())]


@pytest.mark.parametrize("kind", ["exact", "hnsw"])
def test_a_write_leaves_the_index_file_as_it_is(tmp_path: Path, kind: str) -> None:
    with _filled(tmp_path / "s", kind) as store:
        before = store.index_path.read_bytes()
        store.add(NewMemory("a new memory"), fake_vector("a new memory"), FAKE_MODEL)
        store.forget([3])
        store.edit(4, "edited words", fake_vector("edited words"), FAKE_MODEL)
        assert store.index_path.read_bytes() == before


@pytest.mark.parametrize("kind", ["exact", "hnsw"])
def test_a_reader_catches_up_with_another_stores_adds_forgets_and_edits(tmp_path: Path, kind: str) -> None:
    writer = _filled(tmp_path / "s", kind)
    reader = LocalBackend.open(tmp_path / "s", create=False)
    assert _hits(reader, "memory 5")  # the reader's index is loaded and cached
    new = writer.add(NewMemory("zebra quokka"), fake_vector("zebra quokka"), FAKE_MODEL).id
    writer.forget([5])
    writer.edit(6, "platypus words", fake_vector("platypus words"), FAKE_MODEL)
    for store in (reader, LocalBackend.open(tmp_path / "s", create=False)):  # cached, and cold
        assert _hits(store, "zebra quokka", 1)[0] == (new, pytest.approx(1.0, abs=1e-6))
        ids = [mid for mid, _ in _hits(store, "memory 5")]
        assert 5 not in ids and len(ids) == 60
        assert _hits(store, "platypus words", 1)[0][0] == 6
        assert store.warnings == []


def test_scores_after_a_catch_up_are_those_of_a_fresh_checkpoint(tmp_path: Path) -> None:
    store = _filled(tmp_path / "s", "exact")
    for n in range(30):
        text = f"later memory {n} about topic {n % 5}"
        store.add(NewMemory(text), fake_vector(text), FAKE_MODEL)
    store.forget([1, 2, 40])
    lagging = LocalBackend.open(tmp_path / "s", create=False)
    caught_up = [_hits(lagging, f"topic {n} memory") for n in range(5)]
    reindex(store.home, "exact", force=True)
    fresh = LocalBackend.open(tmp_path / "s", create=False)
    assert [_hits(fresh, f"topic {n} memory") for n in range(5)] == caught_up  # bit for bit


@pytest.mark.parametrize("kind", ["exact", "hnsw"])
def test_the_checkpoint_is_rewritten_past_the_bound_and_the_log_pruned(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sync, "LAG_BOUND", 5)
    store = _filled(tmp_path / "s", kind)
    generation = VectorIndex.load(store.index_path, FAKE_DIM).header.generation
    store.forget([1, 2])
    for n in range(3):
        store.add(NewMemory(f"new {n}"), fake_vector(f"new {n}"), FAKE_MODEL)
    assert VectorIndex.load(store.index_path, FAKE_DIM).header.generation == generation  # lag 5
    store.add(NewMemory("the sixth"), fake_vector("the sixth"), FAKE_MODEL)
    saved = VectorIndex.load(store.index_path, FAKE_DIM)
    assert saved.header.generation == store.records.generation()
    assert sorted(saved.ids().tolist()) == store.records.vector_ids()
    assert store.records.deleted_since(generation) is None  # pruned: an older index reloads
    assert sync.lag(store.records, store.index_path) == 0


def test_reindex_writes_a_lagging_checkpoint_and_then_has_nothing_to_do(tmp_path: Path) -> None:
    store = _filled(tmp_path / "s", "exact")
    store.add(NewMemory("one more"), fake_vector("one more"), FAKE_MODEL)
    assert sync.lag(store.records, store.index_path) == 1
    assert reindex(store.home).rebuilt_index is True
    assert sync.lag(store.records, store.index_path) == 0
    assert reindex(store.home).rebuilt_index is False


def test_an_index_older_than_the_log_catches_up_from_every_id(tmp_path: Path) -> None:
    store = _filled(tmp_path / "s", "exact")
    old = store.index_path.read_bytes()
    store.forget([7])
    store.records.conn.execute("DELETE FROM store_meta WHERE key LIKE 'deleted:%'")  # a log lost
    store.index_path.write_bytes(old)
    reader = LocalBackend.open(tmp_path / "s", create=False)
    assert 7 not in [mid for mid, _ in _hits(reader, "memory 7")]
    assert reader.vector_index(FAKE_DIM).header.dim == FAKE_DIM


def test_a_file_whose_header_does_not_name_the_highest_id_is_read(tmp_path: Path) -> None:
    index = VectorIndex.empty(FAKE_DIM)
    index.add([4, 9], np.stack([fake_vector("a"), fake_vector("b")]))
    index.header.max_id = -1  # as a file saved before the header said it
    index.save(tmp_path / "old.faiss")
    assert VectorIndex.load(tmp_path / "old.faiss", FAKE_DIM).header.max_id == 9


def test_a_cached_index_older_than_the_pruned_log_is_read_again_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sync, "LAG_BOUND", 3)
    writer = _filled(tmp_path / "s", "exact")
    reader = LocalBackend.open(tmp_path / "s", create=False)
    cached = reader.vector_index(FAKE_DIM)
    writer.forget([8, 9])
    for n in range(3):
        writer.add(NewMemory(f"new {n}"), fake_vector(f"new {n}"), FAKE_MODEL)  # the third checkpoints
    assert not writer.records.logs_deletions_since(cached.header.generation)
    caught_up = reader.vector_index(FAKE_DIM)
    assert caught_up is not cached  # the new checkpoint, not a catch-up from every id
    assert sorted(caught_up.ids().tolist()) == writer.records.vector_ids()
