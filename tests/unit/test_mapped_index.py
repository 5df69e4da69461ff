"""Index files are mapped, not read (issue 32): searches read the page cache's pages in place, a
process that did not warm up lets go of what an exact scan read, writers get an index of their own,
and a FAISS without in-place reading still loads the file."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from remem.backends.local.kinds import HnswParams, IndexKind
from remem.backends.local.vectors import VectorIndex

DIM = 384
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")


def _units(n: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _saved(path: Path, kind: IndexKind, n: int) -> np.ndarray:
    vectors = _units(n)
    index = VectorIndex.empty(DIM, kind, HnswParams(m=8, ef_construction=16, ef_search=64))
    index.add(np.arange(1, n + 1), vectors)
    index.save(path, generation=1)
    return vectors


def _mapped_file_mb() -> float:
    """Megabytes of files mapped into this process's memory now (RssFile)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no RssFile in /proc/self/status")


@linux_only
@pytest.mark.parametrize("resident", [False, True])
def test_an_exact_scan_keeps_the_pages_it_read_only_in_a_process_that_warmed_up(
    tmp_path: Path, resident: bool
) -> None:
    path = tmp_path / "vectors.faiss"
    vectors = _saved(path, IndexKind.EXACT, 65_536)  # 96 MB of float32
    before = _mapped_file_mb()
    index = VectorIndex.load(path, DIM)
    if resident:
        index.keep_resident()
    hits = index.search(vectors[123], 3)
    grown = _mapped_file_mb() - before
    assert hits[0][0] == 124 and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert grown > 80 if resident else grown < 10


@linux_only
def test_loading_verifies_every_byte_without_keeping_the_file_mapped(tmp_path: Path) -> None:
    path = tmp_path / "vectors.faiss"
    _saved(path, IndexKind.EXACT, 65_536)
    before = _mapped_file_mb()
    index = VectorIndex.load(path, DIM)
    assert index.size == 65_536 and _mapped_file_mb() - before < 10


def test_a_writer_changes_a_mapped_graph_and_the_file_it_came_from_stays_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "vectors.faiss"
    vectors = _saved(path, IndexKind.HNSW, 2_000)
    saved = path.read_bytes()
    index = VectorIndex.load(path, DIM)
    extra = _units(10, seed=1)
    index.add(np.arange(5_001, 5_011), extra)
    assert index.search(extra[4], 1)[0][0] == 5_005 and index.search(vectors[9], 1)[0][0] == 10
    assert path.read_bytes() == saved
    index.save(path, generation=2)
    again = VectorIndex.load(path, DIM)
    assert again.size == 2_010 and again.search(extra[4], 1)[0][0] == 5_005


def test_a_writer_changes_a_mapped_exact_index_into_memory_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "vectors.faiss"
    vectors = _saved(path, IndexKind.EXACT, 2_000)
    index = VectorIndex.load(path, DIM)
    index.remove([1, 2])
    index.add([9_999], _units(1, seed=2))
    assert [hit for hit, _ in index.search(vectors[2], 1)] == [3] and index.size == 1_999
    assert 1 not in set(index.ids().tolist()) and VectorIndex.load(path, DIM).size == 2_000


def test_a_faiss_that_cannot_read_in_place_reads_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import faiss

    path = tmp_path / "vectors.faiss"
    vectors = _saved(path, IndexKind.HNSW, 500)
    monkeypatch.delattr(faiss, "ZeroCopyIOReader")
    index = VectorIndex.load(path, DIM)
    assert index.search(vectors[42], 1)[0][0] == 43


def _private_mb() -> float:
    """Megabytes of this process's own memory now (RssAnon)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon in /proc/self/status")


@linux_only
def test_adding_to_a_mapped_exact_index_and_saving_it_copies_nothing_of_what_it_held(tmp_path: Path) -> None:
    path = tmp_path / "vectors.faiss"
    vectors = _saved(path, IndexKind.EXACT, 65_536)  # 96 MB
    index = VectorIndex.load(path, DIM)
    before = (_private_mb(), _mapped_file_mb())
    extra = _units(3, seed=3)
    index.add([70_001, 70_002, 70_003], extra)
    index.save(path, generation=2)
    assert _private_mb() - before[0] < 20 and _mapped_file_mb() - before[1] < 10
    again = VectorIndex.load(path, DIM)
    assert again.size == 65_539 and again.search(extra[1], 1)[0][0] == 70_002
    assert again.search(vectors[65_535], 1)[0][0] == 65_536
    assert again.vectors([70_003, 1]).tolist() == [extra[2].tolist(), vectors[0].tolist()]


@linux_only
@pytest.mark.parametrize("kind", [IndexKind.EXACT, IndexKind.HNSW])
def test_where_a_mapping_would_pin_the_file_a_process_reads_a_copy_and_holds_nothing_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: IndexKind
) -> None:
    """Windows (issue 53 #4): a file a process maps cannot be renamed over, so there the index file
    is read into memory and no mapping of it is kept; the searches are those of the mapped file."""
    from remem.backends.local import mapped as mapping

    path = tmp_path / "vectors.faiss"
    vectors = _saved(path, kind, 3_000)
    mapped = VectorIndex.load(path, DIM)
    assert str(path) in Path("/proc/self/maps").read_text()
    expected = [mapped.search(vectors[n], 5) for n in (0, 1234, 2999)]
    del mapped
    monkeypatch.setattr(mapping, "MAP_IN_PLACE", False)
    copied = VectorIndex.load(path, DIM)
    assert str(path) not in Path("/proc/self/maps").read_text()
    path.unlink()  # nothing holds the file: it can go, or be replaced, while the copy is searched
    assert [copied.search(vectors[n], 5) for n in (0, 1234, 2999)] == expected
