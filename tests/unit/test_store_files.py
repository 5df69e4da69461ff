"""Store files on disk: opening and creating, permissions, and self-repair of the FAISS index file."""

from __future__ import annotations

import sqlite3
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from helpers import FAKE_DIM, FAKE_MODEL, cosine, fake_vector, vector_search
from remem import Filters, NewMemory
from remem.backends.local import LocalBackend
from remem.backends.local.files import DB_FILE
from remem.backends.local.migrations import LATEST_VERSION
from remem.backends.local.vectors import VectorIndex
from remem.errors import StoreCorruptError, StoreError, StoreNotFoundError


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- opening -------------------------------------------------------------------------------------------


def test_create_makes_private_dir_and_files(store_dir: Path) -> None:
    assert not store_dir.exists()
    with LocalBackend.open(store_dir, create=True) as store:
        assert store_dir.is_dir()
        assert _mode(store_dir) == 0o700
        assert _mode(store_dir / DB_FILE) == 0o600
        store.add(NewMemory("hello"), fake_vector("hello"), FAKE_MODEL)
        assert _mode(store.index_path) == 0o600
        for path in store_dir.iterdir():  # lock file, WAL and shm files too
            assert _mode(path) & 0o077 == 0, path


def test_create_makes_missing_parents(tmp_path: Path) -> None:
    directory = tmp_path / "a" / "b" / "store"
    with LocalBackend.open(directory, create=True):
        assert (directory / DB_FILE).is_file()


def test_new_store_database_at_latest_version(store_dir: Path) -> None:
    LocalBackend.open(store_dir, create=True).close()
    conn = sqlite3.connect(store_dir / DB_FILE)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (LATEST_VERSION,)
    finally:
        conn.close()


def test_open_existing_without_create(store_dir: Path) -> None:
    with LocalBackend.open(store_dir, create=True) as store:
        store.add(NewMemory("kept"), fake_vector("kept"), FAKE_MODEL)
    with LocalBackend.open(store_dir, create=False) as store:
        assert [m.text for m in store.iter_all()] == ["kept"]


@pytest.mark.parametrize("create", [True, False])
def test_path_that_is_a_regular_file_raises(tmp_path: Path, create: bool) -> None:
    path = tmp_path / "afile"
    path.write_text("not a directory")
    with pytest.raises(StoreError, match="not a directory"):
        LocalBackend.open(path, create=create)
    assert path.read_text() == "not a directory"


def test_open_without_create_on_missing_dir_raises_not_found(store_dir: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        LocalBackend.open(store_dir, create=False)
    assert not store_dir.exists()


def test_open_without_create_on_empty_dir_raises_not_found(store_dir: Path) -> None:
    store_dir.mkdir()
    with pytest.raises(StoreNotFoundError):
        LocalBackend.open(store_dir, create=False)
    assert list(store_dir.iterdir()) == []


@pytest.mark.parametrize("create", [True, False])
def test_garbage_database_raises_corrupt_naming_file(store_dir: Path, create: bool) -> None:
    store_dir.mkdir()
    db = store_dir / DB_FILE
    garbage = np.random.default_rng(3).bytes(8192)
    db.write_bytes(garbage)
    with pytest.raises(StoreCorruptError) as info:
        LocalBackend.open(store_dir, create=create)
    assert str(db) in str(info.value)
    assert db.read_bytes() == garbage


def test_newer_schema_raises_store_error(store_dir: Path) -> None:
    LocalBackend.open(store_dir, create=True).close()
    conn = sqlite3.connect(store_dir / DB_FILE)
    conn.execute(f"PRAGMA user_version = {LATEST_VERSION + 5}")
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        LocalBackend.open(store_dir, create=False)


def test_unwritable_location_raises_store_error() -> None:
    # /proc refuses new entries even for root
    with pytest.raises(StoreError, match="cannot use store directory"):
        LocalBackend.open(Path("/proc/remem-test/store"), create=True)


# --- index file repair ---------------------------------------------------------------------------------


@pytest.fixture
def filled(store_dir: Path) -> Iterator[tuple[Path, dict[int, np.ndarray]]]:
    """A store directory with 30 memories of random unit vectors (store closed)."""
    rng = np.random.default_rng(11)
    vectors: dict[int, np.ndarray] = {}
    with LocalBackend.open(store_dir, create=True) as store:
        for i in range(30):
            vector = rng.normal(size=FAKE_DIM).astype(np.float32)
            vector /= np.linalg.norm(vector)
            vectors[store.add(NewMemory(f"memory {i}"), vector, FAKE_MODEL).id] = vector
        assert store.warnings == []
    yield store_dir, vectors


def _check_search(store: LocalBackend, vectors: dict[int, np.ndarray], seed: int = 0, k: int = 5) -> None:
    query = np.random.default_rng(seed).normal(size=FAKE_DIM).astype(np.float32)
    query /= np.linalg.norm(query)
    hits = vector_search(store, query, k, Filters())
    expected = sorted(vectors, key=lambda mid: -float(vectors[mid] @ query))[:k]
    assert [hit.memory.id for hit in hits] == expected
    np.testing.assert_allclose(
        [cosine(hit) for hit in hits], [float(vectors[mid] @ query) for mid in expected], atol=1e-5
    )


def _index_file(store_dir: Path) -> Path:
    with LocalBackend.open(store_dir, create=False) as store:
        return store.index_path


DAMAGES: dict[str, Callable[[Path], object]] = {
    "deleted": lambda path: path.unlink(),
    "truncated": lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]),
    "zeros": lambda path: path.write_bytes(bytes(path.stat().st_size)),
    "garbage": lambda path: path.write_bytes(np.random.default_rng(9).bytes(path.stat().st_size)),
    "empty": lambda path: path.write_bytes(b""),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damaged_index_is_rebuilt_on_search(filled: tuple[Path, dict[int, np.ndarray]], damage: str) -> None:
    store_dir, vectors = filled
    index_path = _index_file(store_dir)
    DAMAGES[damage](index_path)
    with LocalBackend.open(store_dir, create=False) as store:
        _check_search(store, vectors)
        assert len(store.warnings) == 1
        assert "rebuilt" in store.warnings[0]
        assert str(index_path) in store.warnings[0]
    repaired = VectorIndex.load(index_path, FAKE_DIM)
    assert repaired.size == len(vectors)
    assert sorted(repaired.ids().tolist()) == sorted(vectors)
    assert _mode(index_path) == 0o600
    with LocalBackend.open(store_dir, create=False) as store:  # no second warning: the file was fixed
        _check_search(store, vectors, seed=1)
        assert store.warnings == []


def test_damaged_index_is_rebuilt_on_add(filled: tuple[Path, dict[int, np.ndarray]]) -> None:
    store_dir, vectors = filled
    DAMAGES["garbage"](_index_file(store_dir))
    with LocalBackend.open(store_dir, create=False) as store:
        vector = np.zeros(FAKE_DIM, dtype=np.float32)
        vector[0] = 1.0
        vectors[store.add(NewMemory("new one"), vector, FAKE_MODEL).id] = vector
        # the add finds no usable checkpoint header and writes one from the database
        _check_search(store, vectors)
        assert store.warnings == []
    assert VectorIndex.load(_index_file(store_dir), FAKE_DIM).size == len(vectors)
    with LocalBackend.open(store_dir, create=False) as store:
        _check_search(store, vectors)
        assert store.warnings == []


def test_index_of_wrong_dimension_is_rebuilt(filled: tuple[Path, dict[int, np.ndarray]]) -> None:
    store_dir, vectors = filled
    index_path = _index_file(store_dir)
    other = VectorIndex.empty(FAKE_DIM // 2)
    other.add([1, 2], np.eye(2, FAKE_DIM // 2, dtype=np.float32))
    other.save(index_path)
    with LocalBackend.open(store_dir, create=False) as store:
        _check_search(store, vectors)
        assert any("rebuilt" in warning for warning in store.warnings)
    assert VectorIndex.load(index_path, FAKE_DIM).size == len(vectors)


def test_index_disagreeing_with_database_is_rebuilt(
    filled: tuple[Path, dict[int, np.ndarray]], tmp_path: Path
) -> None:
    """An index with ids the database does not have (e.g. copied from another store)."""
    store_dir, vectors = filled
    index_path = _index_file(store_dir)
    foreign = VectorIndex.empty(FAKE_DIM)
    ids = [*range(1, 41)]
    foreign.add(ids, np.tile(np.eye(1, FAKE_DIM, dtype=np.float32), (40, 1)))
    foreign.save(index_path)
    with LocalBackend.open(store_dir, create=False) as store:
        _check_search(store, vectors)
        assert any("rebuilt" in warning for warning in store.warnings)
    assert VectorIndex.load(index_path, FAKE_DIM).size == len(vectors)


def test_missing_index_on_empty_store_does_not_warn(store_dir: Path) -> None:
    with LocalBackend.open(store_dir, create=True) as store:
        assert not store.index_path.exists()
        assert vector_search(store, fake_vector("q"), 5, Filters()) == []
        store.add(NewMemory("first"), fake_vector("first"), FAKE_MODEL)
        assert store.warnings == []
        assert store.index_path.exists()


def test_index_behind_database_catches_up_silently(store_dir: Path) -> None:
    texts = ["alpha beta", "gamma delta", "epsilon zeta"]
    with LocalBackend.open(store_dir, create=True) as store:
        for text in texts:
            store.add(NewMemory(text), fake_vector(text), FAKE_MODEL)
        older = store.index_path.read_bytes()
        new_id = store.add(NewMemory("omega lambda"), fake_vector("omega lambda"), FAKE_MODEL).id
        store.index_path.write_bytes(older)  # a checkpoint older than the last write
        index_path = store.index_path
    assert VectorIndex.load(index_path, FAKE_DIM).size == 1  # the checkpoint the first add wrote
    with LocalBackend.open(store_dir, create=False) as store:
        (hit,) = vector_search(store, fake_vector("omega lambda"), 1, Filters())
        assert hit.memory.id == new_id
        assert cosine(hit) == pytest.approx(1.0, abs=1e-5)
        assert len(vector_search(store, fake_vector("alpha"), 10, Filters())) == 4
        assert store.warnings == []
    assert VectorIndex.load(index_path, FAKE_DIM).size == 1  # a checkpoint: not rewritten for three


def test_index_behind_database_catches_up_on_add(store_dir: Path) -> None:
    with LocalBackend.open(store_dir, create=True) as store:
        store.add(NewMemory("one"), fake_vector("one"), FAKE_MODEL)
        older = store.index_path.read_bytes()
        second = store.add(NewMemory("two"), fake_vector("two"), FAKE_MODEL).id
        store.index_path.write_bytes(older)
        third = store.add(NewMemory("three"), fake_vector("three"), FAKE_MODEL).id
        assert store.warnings == []
        index = store.vector_index(FAKE_DIM)
        assert index.ids().tolist()[1:] == [second, third]
