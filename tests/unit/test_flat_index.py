"""The numpy exact index: FAISS's file layout byte for byte, and FAISS's exact answers."""

from __future__ import annotations

import struct

import faiss
import numpy as np
import pytest

from remem.backends.local.flat import FlatFormatError, FlatIndex

DIM = 16


def _rows(n: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return np.asarray(rows / np.linalg.norm(rows, axis=1, keepdims=True), dtype=np.float32)


def _both(n: int = 40, removed: slice = slice(5, 9)) -> tuple[FlatIndex, faiss.IndexIDMap2, np.ndarray]:
    """The same vectors, added in small batches and partly removed, in ours and in FAISS."""
    ids, vectors = np.arange(n, dtype=np.int64) * 3 + 7, _rows(n)
    theirs = faiss.IndexIDMap2(faiss.IndexFlatIP(DIM))
    ours = FlatIndex.empty(DIM)
    for start in range(0, n, 7):
        theirs.add_with_ids(vectors[start : start + 7], ids[start : start + 7])
        ours.add(ids[start : start + 7], vectors[start : start + 7])
    theirs.remove_ids(faiss.IDSelectorBatch(ids[removed]))
    ours.remove(ids[removed].tolist())
    return ours, theirs, ids


def _bytes(index: FlatIndex) -> bytes:
    return b"".join(bytes(piece) for piece in index.to_bytes())


def test_writes_exactly_what_faiss_writes() -> None:
    ours, theirs, _ = _both()
    assert _bytes(ours) == faiss.serialize_index(theirs).tobytes()
    assert (
        _bytes(FlatIndex.empty(DIM))
        == faiss.serialize_index(faiss.IndexIDMap2(faiss.IndexFlatIP(DIM))).tobytes()
    )


def test_reads_what_faiss_wrote_and_faiss_reads_what_it_wrote() -> None:
    ours, theirs, ids = _both()
    read = FlatIndex.from_bytes(faiss.serialize_index(theirs).tobytes())
    assert read.ids().tolist() == ours.ids().tolist() == faiss.vector_to_array(theirs.id_map).tolist()
    back = faiss.deserialize_index(np.frombuffer(_bytes(ours), dtype=np.uint8))
    kept = [i for i in ids.tolist() if i in set(read.ids().tolist())]
    np.testing.assert_array_equal(read.vectors(kept), back.reconstruct_batch(np.asarray(kept)))


@pytest.mark.parametrize("k", [1, 5, 36, 100])
def test_search_gives_faiss_exact_answers(k: int) -> None:
    ours, theirs, _ = _both()
    for seed in range(5):
        query = _rows(1, seed=100 + seed)
        scores, labels = theirs.search(query, min(k, theirs.ntotal))
        found = ours.search(query[0], k)
        assert [i for i, _ in found] == labels[0].tolist()
        np.testing.assert_allclose([s for _, s in found], scores[0], atol=1e-6)


def test_search_among_ignores_duplicates_and_absent_ids() -> None:
    ours, _, ids = _both()
    query = _rows(1, seed=7)[0]
    among = [int(ids[20]), int(ids[20]), int(ids[3]), 999_999, int(ids[6])]  # ids[6] was removed
    assert sorted(i for i, _ in ours.search(query, 10, among)) == sorted([int(ids[3]), int(ids[20])])
    assert ours.search(query, 10, []) == []


def test_results_are_ordered_by_score_then_smaller_id() -> None:
    index = FlatIndex.empty(DIM)
    rows = _rows(3)
    index.add([50, 9, 30, 40, 20, 10], np.concatenate([rows, rows]))  # every score twice
    for query in _rows(4, seed=11):
        found = index.search(query, 6)
        assert found == sorted(found, key=lambda pair: (-pair[1], pair[0]))
        assert len({i for i, _ in found}) == 6


def test_a_loaded_index_can_grow_and_shrink() -> None:
    ours, _, ids = _both()
    loaded = FlatIndex.from_bytes(_bytes(ours))  # read-only views of the bytes
    extra = _rows(100, seed=3)
    for n in range(100):
        loaded.add([10_000 + n], extra[n : n + 1])
    loaded.remove([int(ids[0]), 10_050])
    assert len(loaded.ids()) == len(ours.ids()) + 98 and loaded.removed == 2
    np.testing.assert_array_equal(
        loaded.vectors([10_099, int(ids[1])]), [extra[99], ours.vectors([int(ids[1])])[0]]
    )
    assert FlatIndex.from_bytes(_bytes(loaded)).ids().tolist() == loaded.ids().tolist()


def test_vectors_of_an_absent_id_is_a_key_error() -> None:
    ours, _, ids = _both()
    with pytest.raises(KeyError, match="999"):
        ours.vectors([int(ids[0]), 999])


def test_other_faiss_indexes_and_damaged_bytes_are_refused() -> None:
    ours, _, _ = _both()
    good = _bytes(ours)
    l2 = faiss.IndexIDMap2(faiss.IndexFlatL2(DIM))
    hnsw = faiss.IndexIDMap2(faiss.IndexHNSWFlat(DIM, 8, faiss.METRIC_INNER_PRODUCT))
    bare = faiss.IndexFlatIP(DIM)
    for other in (l2, hnsw, bare):
        with pytest.raises(FlatFormatError):
            FlatIndex.from_bytes(faiss.serialize_index(other).tobytes())
    too_many = good[:8] + struct.pack("<q", 10**15) + good[16:]
    for damaged in (b"", good[:30], good[:-1], good + b"\0", too_many):
        with pytest.raises(FlatFormatError):
            FlatIndex.from_bytes(damaged)


def test_scores_do_not_depend_on_how_the_rows_are_split_between_file_and_memory() -> None:
    """A checkpoint's rows read in place and the rows added since are scored in the same products as
    one file of them all: bit for bit the same scores (BLAS rounds a row's sum by where it falls)."""
    rows, ids = _rows(20_003, seed=5), np.arange(20_003, dtype=np.int64)
    whole = FlatIndex.empty(DIM)
    whole.add(ids, rows)
    query = _rows(1, seed=6)[0]
    expected = FlatIndex.from_bytes(_bytes(whole), lambda a, b: None).scores(query)[1]
    for split in (1, 4_099, 16_384, 17_001, 20_002):
        part = FlatIndex.empty(DIM)
        part.add(ids[:split], rows[:split])
        loaded = FlatIndex.from_bytes(_bytes(part), lambda a, b: None)
        loaded.add(ids[split:], rows[split:])
        assert np.array_equal(loaded.scores(query)[1], expected), split
