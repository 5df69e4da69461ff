"""A batch of memories goes into the vector index in a few calls, not one per memory (each call
copies the index's id list: one per memory made ``add_many`` quadratic, hours at a million); the
index catches a batch up from SQLite when it is next read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from remem.backends.local import LocalBackend
from remem.backends.local.flat import FlatIndex
from remem.testing import FAKE_MODEL, fake_vector
from remem.types import NewMemory


def test_add_many_indexes_in_chunks_and_every_window_under_its_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    original = FlatIndex.add

    def counted(index: FlatIndex, ids: object, vectors: np.ndarray) -> None:
        calls.append(len(vectors))
        original(index, ids, vectors)  # type: ignore[arg-type]

    monkeypatch.setattr(FlatIndex, "add", counted)
    texts = [f"memory {i} about topic {i % 37}" for i in range(3_000)]
    memories = [NewMemory(text) for text in texts] + [NewMemory(texts[5])]  # the last is a duplicate
    vectors = [fake_vector(t).reshape(1, -1) for t in texts] + [fake_vector(texts[5]).reshape(1, -1)]
    vectors[7] = np.stack([fake_vector(texts[7]), fake_vector("a second window")])
    with LocalBackend.open(tmp_path / "store", create=True) as store:
        store.add_many([NewMemory("the first")], [fake_vector("the first").reshape(1, -1)], FAKE_MODEL)
        store.vector_index(FAKE_MODEL.dim)  # the checkpoint the batch below is caught up onto
        calls.clear()
        results = store.add_many(memories, vectors, FAKE_MODEL)
        assert results[-1].duplicate and results[-1].id == results[5].id
        assert calls == []  # a write commits rows only: the index file is a checkpoint
        index = store.vector_index(FAKE_MODEL.dim)  # caught up from SQLite
        assert sum(calls) == 3_001 and len(calls) <= 3  # 3,000 memories, one with two windows
        stored = store.records.vectors_of_memories([r.id for r in results[:-1]])
        for i in (0, 7, 1_234, 2_999):
            for vector_id, blob in stored[results[i].id]:
                row = np.frombuffer(blob, dtype="<f4")
                assert index.search(row, 1)[0][0] == vector_id
