"""The FAISS vector index wrapper and atomic file replacement."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from remem.atomic import atomic_writer
from remem.backends.local import flat
from remem.backends.local.flat import FlatIndex
from remem.backends.local.kinds import IndexKind
from remem.backends.local.vectors import IndexFileError, VectorIndex
from remem.errors import StoreError

DIM = 16


def _unit_rows(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return np.asarray(rows / np.linalg.norm(rows, axis=1, keepdims=True), dtype=np.float32)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _filled(n: int = 30, seed: int = 0) -> tuple[VectorIndex, list[int], np.ndarray]:
    index = VectorIndex.empty(DIM)
    ids = [3 * i + 7 for i in range(n)]  # non-contiguous ids
    vectors = _unit_rows(n, seed=seed)
    index.add(ids, vectors)
    return index, ids, vectors


# --- atomic_writer -------------------------------------------------------------------------------------


def test_atomic_writer_creates_file_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    with atomic_writer(path) as handle:
        handle.write(b"new data")
    assert path.read_bytes() == b"new data"
    assert _mode(path) == 0o600
    assert os.listdir(tmp_path) == ["f.bin"]


def test_atomic_writer_replaces_existing_file_and_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    path.chmod(0o644)
    with atomic_writer(path) as handle:
        handle.write(b"new")
    assert path.read_bytes() == b"new"
    assert _mode(path) == 0o600


def test_atomic_writer_leaves_old_file_on_exception(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"old content")

    class BoomError(Exception):
        pass

    with pytest.raises(BoomError), atomic_writer(path) as handle:
        handle.write(b"partial new content")
        raise BoomError
    assert path.read_bytes() == b"old content"
    assert sorted(os.listdir(tmp_path)) == ["f.bin"]


def test_atomic_writer_exception_on_new_path_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "never.bin"
    with pytest.raises(KeyboardInterrupt), atomic_writer(path) as handle:
        handle.write(b"x")
        raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []


def test_atomic_writer_missing_directory_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError), atomic_writer(tmp_path / "nope" / "f.bin") as handle:
        handle.write(b"x")


# --- VectorIndex ---------------------------------------------------------------------------------------


def test_empty_index() -> None:
    index = VectorIndex.empty(DIM)
    assert index.size == 0
    assert index.ids().tolist() == []
    assert index.search(_unit_rows(1)[0], 5) == []


def test_add_keeps_ids_in_insertion_order() -> None:
    index, ids, _ = _filled(10)
    assert index.size == 10
    assert index.ids().tolist() == ids
    index.add([], np.zeros((0, DIM), dtype=np.float32))  # adding nothing is a no-op
    assert index.size == 10


def _finds_exact_top(index: VectorIndex, ids: list[int], vectors: np.ndarray, atol: float) -> np.ndarray:
    """Assert that ``index`` finds the exact top 7 of ``ids`` / ``vectors`` for a query; return it."""
    query = _unit_rows(1, seed=99)[0]
    scores = vectors @ query
    order = np.argsort(-scores)[:7]
    result = index.search(query, 7)
    assert [mid for mid, _ in result] == [ids[i] for i in order]
    np.testing.assert_allclose([s for _, s in result], scores[order], atol=atol)
    return query


def test_search_is_exact_top_k() -> None:
    index, ids, vectors = _filled(50)
    _finds_exact_top(index, ids, vectors, 1e-5)


def test_search_k_larger_than_size_returns_all() -> None:
    index, ids, _ = _filled(4)
    result = index.search(_unit_rows(1, seed=5)[0], 100)
    assert sorted(mid for mid, _ in result) == sorted(ids)
    assert [s for _, s in result] == sorted((s for _, s in result), reverse=True)


def test_search_among_restricts_candidates_exactly() -> None:
    index, ids, vectors = _filled(60)
    query = _unit_rows(1, seed=42)[0]
    among = ids[::4]
    rows = [ids.index(mid) for mid in among]
    scores = vectors[rows] @ query
    order = np.argsort(-scores)[:5]
    result = index.search(query, 5, among)
    assert [mid for mid, _ in result] == [among[i] for i in order]
    np.testing.assert_allclose([s for _, s in result], scores[order], atol=1e-5)


def test_hnsw_scores_the_vectors_added_since_its_graph_on_the_callers_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_blas(*_: object) -> None:
        raise AssertionError("BLAS's threads woken for the vectors added since the graph")

    monkeypatch.setattr(flat, "_blas_product", no_blas)
    index = VectorIndex.empty(DIM, IndexKind.HNSW)
    ids, vectors = [3 * i + 7 for i in range(40)], _unit_rows(40)
    index.add(ids, vectors)  # all added since the (empty) graph was saved
    query = _finds_exact_top(index, ids, vectors, 1e-6)
    among = ids[::3]
    assert {mid for mid, _ in index.search(query, 5, among)} <= set(among)


def test_search_among_fewer_than_k_and_empty() -> None:
    index, ids, _ = _filled(20)
    query = _unit_rows(1, seed=3)[0]
    assert sorted(mid for mid, _ in index.search(query, 10, ids[:3])) == sorted(ids[:3])
    assert index.search(query, 10, []) == []
    # ids that are not in the index are simply never returned
    assert [mid for mid, _ in index.search(query, 10, [ids[0], 100_000])] == [ids[0]]


def test_save_load_round_trip_and_mode(tmp_path: Path) -> None:
    index, ids, _ = _filled(25)
    path = tmp_path / "v.faiss"
    index.save(path)
    assert _mode(path) == 0o600
    loaded = VectorIndex.load(path, DIM)
    assert loaded.size == 25
    assert loaded.ids().tolist() == ids
    query = _unit_rows(1, seed=8)[0]
    assert loaded.search(query, 6) == index.search(query, 6)
    assert os.listdir(tmp_path) == ["v.faiss"]


def test_a_loaded_exact_index_keeps_its_vectors_aligned_for_blas(tmp_path: Path) -> None:
    """Read as one ``bytes`` object, the vectors started 82 bytes into it: unaligned float32 rows,
    which numpy multiplies without BLAS (28 ms instead of 2.3 ms for 10k × 384, bench/search.py)."""
    index, _, _ = _filled(25)
    path = tmp_path / "v.faiss"
    index.save(path)
    for _ in range(3):  # wherever the allocator puts the buffer
        engine = VectorIndex.load(path, DIM)._engine
        assert isinstance(engine, FlatIndex)
        assert engine.aligned


def test_load_missing_file_raises_index_file_error(tmp_path: Path) -> None:
    with pytest.raises(IndexFileError, match="cannot read"):
        VectorIndex.load(tmp_path / "missing.faiss", DIM)


@pytest.mark.parametrize("damage", ["half", "zeros", "garbage", "empty"])
def test_load_damaged_file_raises_index_file_error(tmp_path: Path, damage: str) -> None:
    index, _, _ = _filled(10)
    path = tmp_path / "v.faiss"
    index.save(path)
    data = path.read_bytes()
    damaged = {
        "half": data[: len(data) // 2],
        "zeros": bytes(len(data)),
        "garbage": np.random.default_rng(1).bytes(len(data)),
        "empty": b"",
    }[damage]
    path.write_bytes(damaged)
    with pytest.raises(IndexFileError) as info:
        VectorIndex.load(path, DIM)
    assert str(path) in str(info.value)
    assert isinstance(info.value, StoreError)


def test_load_wrong_dimension_raises(tmp_path: Path) -> None:
    index, _, _ = _filled(5)
    path = tmp_path / "v.faiss"
    index.save(path)
    with pytest.raises(IndexFileError, match="32-d"):
        VectorIndex.load(path, 32)


def test_load_other_index_type_raises(tmp_path: Path) -> None:
    import faiss

    flat = faiss.IndexFlatIP(DIM)
    flat.add(_unit_rows(3))
    path = tmp_path / "flat.faiss"
    path.write_bytes(faiss.serialize_index(flat).tobytes())
    with pytest.raises(IndexFileError):
        VectorIndex.load(path, DIM)


def test_save_into_missing_directory_raises_store_error(tmp_path: Path) -> None:
    index, _, _ = _filled(3)
    with pytest.raises(StoreError, match="cannot write"):
        index.save(tmp_path / "missing-dir" / "v.faiss")
