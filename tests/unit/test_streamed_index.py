"""The exact index file a big ingest writes straight from the database (``streamed``) is byte for
byte the file the index held in memory writes, and every later open uses it as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

import remem
from remem.backends.local import LocalBackend, sync
from remem.backends.local.streamed import write_exact
from remem.core import staged
from remem.testing import FakeEmbedder


def test_the_streamed_index_file_is_the_one_the_index_in_memory_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(staged, "STAGE_BATCH", 50)
    with remem.open(str(tmp_path / "store"), embedder=FakeEmbedder()) as memories:
        memories.add_many(f"memory {n} of a few hundred" for n in range(400))
        memories.forget([3, 70])  # a gap in the vector ids
        memories.add_many([f"more {n}" for n in range(120)])  # staged again: the file written anew
    backend = LocalBackend.open(tmp_path / "store", create=False)
    settings, model = backend.settings, backend.model
    assert model is not None
    streamed = tmp_path / "streamed.faiss"
    write_exact(backend.records, streamed, model.dim, settings.hnsw)
    in_memory = tmp_path / "in-memory.faiss"
    sync.build(backend.records, model.dim, settings.built_kind, settings.hnsw).save(in_memory)
    assert streamed.read_bytes() == in_memory.read_bytes()
    synced = sync.synced_index(
        backend.records, backend.index_path, model.dim, settings.built_kind, settings.hnsw
    )
    assert not synced.changed and synced.warning is None and synced.index.size == 518
    backend.close()
