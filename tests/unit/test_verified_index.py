"""An index file verified once is trusted while it is the same file (``backends/local/verified``):
a later load reads its checksum line, not its bytes; any change through the file system, a file
too new to be recorded, or a store that cannot record has it verified as before."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from helpers import vector_search
from remem.backends.local import sync, verified
from remem.backends.local.kinds import HnswParams, IndexKind
from remem.backends.local.maintenance import reindex
from remem.backends.local.mapped import MappedFile
from remem.backends.local.store import LocalBackend
from remem.backends.local.transactions import atomic, snapshot
from remem.backends.local.vectors import IndexFileError, VectorIndex
from remem.testing import FAKE_DIM, FAKE_MODEL, fake_vector
from remem.types import Filters, NewMemory

DIM = 16


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times a file's bytes were hashed (each call's length)."""
    calls: list[int] = []
    digest = MappedFile.digest

    def counting(self: MappedFile, end: int) -> str:
        calls.append(end)
        return digest(self, end)

    monkeypatch.setattr(MappedFile, "digest", counting)
    return calls


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files count as settled at once (a test cannot set a change time back)."""
    monkeypatch.setattr(verified, "SETTLED_NS", 0)


def _recorded(directory: Path) -> tuple[Path, verified.Verified | None]:
    """A saved index file and the record its first load made."""
    path = directory / "vectors.faiss"
    _saved(path)
    return path, VectorIndex.load(path, DIM).verified


def _saved(path: Path, kind: IndexKind = IndexKind.EXACT) -> np.ndarray:
    rows = np.random.default_rng(0).standard_normal((50, DIM)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    index = VectorIndex.empty(DIM, kind, HnswParams(m=8, ef_construction=16, ef_search=64))
    index.add(np.arange(1, 51), rows)
    index.save(path, generation=1)
    return rows


def _flip_a_byte_in_place(path: Path) -> None:
    time.sleep(0.05)  # past any file-system clock's tick (what SETTLED_NS guards in production)
    with path.open("r+b") as handle:
        handle.seek(path.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0xFF]))


@pytest.mark.parametrize("kind", [IndexKind.EXACT, IndexKind.HNSW])
@pytest.mark.usefixtures("settled")
def test_a_file_verified_once_is_trusted_by_its_record(
    tmp_path: Path, hashed: list[int], kind: IndexKind
) -> None:
    path = tmp_path / "vectors.faiss"
    rows = _saved(path, kind)
    first = VectorIndex.load(path, DIM)
    assert len(hashed) == 1 and first.verified is not None
    again = VectorIndex.load(path, DIM, first.verified)
    assert len(hashed) == 1 and again.verified == first.verified
    assert again.search(rows[7], 3) == first.search(rows[7], 3)


@pytest.mark.usefixtures("settled")
def test_a_file_changed_in_place_after_its_record_is_hashed_again_and_found_damaged(
    tmp_path: Path, hashed: list[int]
) -> None:
    path, record = _recorded(tmp_path)
    _flip_a_byte_in_place(path)
    with pytest.raises(IndexFileError, match="checksum"):
        VectorIndex.load(path, DIM, record)
    assert len(hashed) == 2


@pytest.mark.usefixtures("settled")
def test_a_file_renamed_over_a_recorded_one_is_hashed(tmp_path: Path, hashed: list[int]) -> None:
    path, record = _recorded(tmp_path)
    _saved(path)  # the same bytes, another file (a rewrite, a restored copy)
    assert VectorIndex.load(path, DIM, record).verified != record
    assert len(hashed) == 2


@pytest.mark.usefixtures("settled")
def test_a_record_whose_checksum_the_file_does_not_end_with_is_not_trusted(
    tmp_path: Path, hashed: list[int]
) -> None:
    path, record = _recorded(tmp_path)
    assert record is not None
    VectorIndex.load(path, DIM, verified.Verified(record.identity, "0" * 32))
    assert len(hashed) == 2


def test_a_file_that_changed_just_now_is_verified_but_not_recorded(tmp_path: Path, hashed: list[int]) -> None:
    path = tmp_path / "vectors.faiss"
    _saved(path)
    assert VectorIndex.load(path, DIM).verified is None and len(hashed) == 1


def _store(directory: Path) -> LocalBackend:
    store = LocalBackend.open(directory, create=True)
    texts = [f"memory {n} about topic {n % 7}" for n in range(40)]
    store.add_many([NewMemory(t) for t in texts], np.stack([fake_vector(t) for t in texts]), FAKE_MODEL)
    reindex(store.home, "exact")
    return store


@pytest.mark.usefixtures("settled")
def test_a_store_records_the_file_a_process_verified_and_the_next_process_trusts_it(
    tmp_path: Path, hashed: list[int]
) -> None:
    with _store(tmp_path / "s") as store:
        hashed.clear()  # the reindex's check of the file it kept
        store.vector_index(FAKE_DIM)  # as an add's similar-memory look-up loads it
        hits = vector_search(store, fake_vector("memory 3 about topic 3"), 5, Filters())
        assert len(hashed) == 1 and verified.recorded(store.records) is not None
    with LocalBackend.open(tmp_path / "s", create=False) as later:
        assert vector_search(later, fake_vector("memory 3 about topic 3"), 5, Filters()) == hits
    assert len(hashed) == 1


@pytest.mark.usefixtures("settled")
def test_a_store_whose_recorded_file_was_damaged_since_rebuilds_it_with_a_warning(
    tmp_path: Path, hashed: list[int]
) -> None:
    with _store(tmp_path / "s") as store:
        hashed.clear()  # the reindex's check of the file it kept
        store.vector_index(FAKE_DIM)
    _flip_a_byte_in_place(tmp_path / "s" / "vectors.faiss")
    with LocalBackend.open(tmp_path / "s", create=False) as later:
        vector_search(later, fake_vector("memory 3"), 5, Filters())
        assert any("checksum" in warning for warning in later.warnings)
    assert len(hashed) == 2


@pytest.mark.usefixtures("settled")
def test_nothing_is_recorded_inside_a_read_snapshot(tmp_path: Path) -> None:
    with _store(tmp_path / "s") as store, snapshot(store.records.conn):
        synced = sync.synced_index(store.records, store.index_path, FAKE_DIM, IndexKind.EXACT, HnswParams())
        assert synced.index.verified is not None and verified.recorded(store.records) is None


def test_a_damaged_record_is_no_record(tmp_path: Path) -> None:
    with _store(tmp_path / "s") as store:
        with atomic(store.records.conn):
            store.records.set_meta(verified.META_KEY, "{not json")
        assert verified.recorded(store.records) is None
