"""Index kinds, filter-then-search against brute force, edit/forget, reindex, re-embed, doctor."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from helpers import FAKE_DIM, FAKE_MODEL, cosine, fake_vector, search, vector_search
from remem import Filters, ModelInfo, NewMemory, SearchMode
from remem.backends.local import LocalBackend
from remem.backends.local.doctor import examine, repair
from remem.backends.local.maintenance import reindex
from remem.backends.local.reembed import reembed
from remem.backends.local.vectors import HnswParams, IndexKind, VectorIndex
from remem.errors import InvalidInputError
from remem.times import utc_iso

USERS, ROLES, TAGS = ("ann", "bob", "cy"), ("user", "assistant"), ("red", "green", "blue")


def _random_unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, FAKE_DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture
def populated(store_dir: Path) -> tuple[LocalBackend, dict[int, np.ndarray]]:
    """300 memories with random vectors and varied users, roles, tags, meta and timestamps."""
    rng, pick = np.random.default_rng(7), random.Random(7)
    vectors = _random_unit(rng, 300)
    memories = [
        NewMemory(
            text=f"memory {i}",
            user=pick.choice(USERS),
            role=pick.choice(ROLES),
            tags=tuple(pick.sample(TAGS, pick.randint(0, 2))),
            meta={"project": pick.choice(["x", "y"])},
        )
        for i in range(300)
    ]
    store = LocalBackend.open(store_dir, create=True)
    results = store.add_many(memories, vectors, FAKE_MODEL)
    conn = store.records.conn  # spread creation times over 300 hours so --since/--until select
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for result in results:
        created = utc_iso(start + timedelta(hours=result.id))
        conn.execute("UPDATE memories SET created_at = ? WHERE id = ?", (created, result.id))
    return store, {r.id: v for r, v in zip(results, vectors, strict=True)}


def _brute_force(
    store: LocalBackend, vectors: dict[int, np.ndarray], query: np.ndarray, k: int, f: Filters
) -> list[int]:
    allowed = set(store.records.candidate_ids(f))
    scored = sorted(((float(v @ query), mid) for mid, v in vectors.items() if mid in allowed), reverse=True)
    return [mid for _, mid in scored[:k]]


FILTERS = [
    Filters(),
    Filters(user="bob"),
    Filters(role="assistant", tags=("red",)),
    Filters(tags=("red", "green")),
    Filters(meta=(("project", "y"),)),
    Filters(since="2026-01-05T00:00:00.000Z", until="2026-01-08T00:00:00.000Z"),
    Filters(user="cy", role="user", meta=(("project", "x"),), since="2026-01-03T00:00:00.000Z"),
]


@pytest.mark.parametrize("kind", [IndexKind.EXACT, IndexKind.HNSW])
@pytest.mark.parametrize("filters", FILTERS)
def test_filtered_search_returns_the_true_top_k(
    populated: tuple[LocalBackend, dict[int, np.ndarray]], kind: IndexKind, filters: Filters
) -> None:
    store, vectors = populated
    reindex(store.home, kind.value)
    rng = np.random.default_rng(11)
    for query in _random_unit(rng, 5):
        expected = _brute_force(store, vectors, query, 5, filters)
        hits = vector_search(store, query, 5, filters)
        assert [h.memory.id for h in hits] == expected
        assert len(hits) == min(5, len(store.records.candidate_ids(filters)))


def test_hnsw_with_a_large_filtered_set_uses_the_graph_and_stays_exact_enough(
    populated: tuple[LocalBackend, dict[int, np.ndarray]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from remem.backends.local import lanes

    monkeypatch.setattr(lanes, "EXACT_CANDIDATES", 10)  # force the selector path
    store, vectors = populated
    reindex(store.home, "hnsw")
    for query in _random_unit(np.random.default_rng(3), 5):
        hits = vector_search(store, query, 5, Filters(user="ann"))
        assert [h.memory.id for h in hits] == _brute_force(store, vectors, query, 5, Filters(user="ann"))


def test_hnsw_recall_against_exact_on_random_vectors() -> None:
    rng = np.random.default_rng(0)
    data, queries = _random_unit(rng, 5000), _random_unit(rng, 50)
    exact, hnsw = VectorIndex.empty(FAKE_DIM, IndexKind.EXACT), VectorIndex.empty(FAKE_DIM, IndexKind.HNSW)
    for index in (exact, hnsw):
        index.add(np.arange(5000), data)
    recall = np.mean(
        [len({i for i, _ in hnsw.search(q, 10)} & {i for i, _ in exact.search(q, 10)}) / 10 for q in queries]
    )
    assert recall >= 0.9  # uniform random vectors are HNSW's worst case; clustered data does better


@pytest.mark.parametrize("kind", ["exact", "hnsw"])
def test_forget_and_edit_keep_sqlite_and_index_together(
    populated: tuple[LocalBackend, dict[int, np.ndarray]], kind: str
) -> None:
    store, vectors = populated
    reindex(store.home, kind)
    target = 17
    assert vector_search(store, vectors[target], 1, Filters())[0].memory.id == target
    assert store.forget([target, 9999]) == [target]
    assert target not in [h.memory.id for h in vector_search(store, vectors[target], 300, Filters())]
    new_vector = fake_vector("completely new words")
    edited = store.edit(18, "completely new words", new_vector, FAKE_MODEL)
    assert (edited.id, edited.text, edited.updated_at is not None) == (18, "completely new words", True)
    assert vector_search(store, new_vector, 1, Filters())[0].memory.id == 18
    old_hits = vector_search(store, vectors[18], 300, Filters())
    assert next(cosine(h) for h in old_hits if h.memory.id == 18) == pytest.approx(
        float(new_vector @ vectors[18])
    )
    assert all(check.ok for check in examine(store.home)), examine(store.home)
    assert VectorIndex.load(store.index_path, FAKE_DIM).tombstones == frozenset()  # the checkpoint
    index = store.vector_index(FAKE_DIM)  # caught up: the deletions logged since
    assert len(index.tombstones) == (2 if kind == "hnsw" else 0)  # forgotten + edited-away vector


def test_edit_errors(populated: tuple[LocalBackend, dict[int, np.ndarray]]) -> None:
    store, _ = populated
    with pytest.raises(InvalidInputError, match="no memory 4242"):
        store.edit(4242, "x", fake_vector("x"), FAKE_MODEL)
    store.add(NewMemory("taken text", user="zed"), fake_vector("taken text"), FAKE_MODEL)
    mine = store.add(NewMemory("other text", user="zed"), fake_vector("other text"), FAKE_MODEL)
    with pytest.raises(InvalidInputError, match="already holds this text"):
        store.edit(mine.id, "taken text", fake_vector("taken text"), FAKE_MODEL)
    assert store.records.get_many([mine.id])[mine.id].text == "other text"


def test_reindex_switches_kinds_clears_tombstones_and_is_idempotent(
    populated: tuple[LocalBackend, dict[int, np.ndarray]],
) -> None:
    store, _ = populated
    first = reindex(store.home, "hnsw", HnswParams(m=16, ef_construction=100, ef_search=64))
    assert (first.kind, first.rebuilt_index) == (IndexKind.HNSW, True)
    assert reindex(store.home).rebuilt_index is False  # nothing changed: nothing to do
    store.forget([1, 2, 3])
    assert len(store.vector_index(FAKE_DIM).tombstones) == 3
    assert reindex(store.home).rebuilt_index is True
    rebuilt = VectorIndex.load(store.index_path, FAKE_DIM)
    assert (rebuilt.kind, rebuilt.tombstones, rebuilt.header.hnsw.m) == (IndexKind.HNSW, frozenset(), 16)
    assert reindex(store.home, "exact").kind is IndexKind.EXACT
    assert reindex(store.home, "auto").kind is IndexKind.EXACT  # 297 vectors: below the HNSW threshold


def test_reembed_is_resumable_and_swaps_atomically(
    populated: tuple[LocalBackend, dict[int, np.ndarray]],
) -> None:
    store, _ = populated
    other = ModelInfo(name="fake-other", dim=FAKE_DIM, pooling="cls", sha256="e" * 64)
    calls: list[int] = []

    def flaky(rows: list[tuple[int, str]]) -> np.ndarray:
        calls.append(len(rows))
        if len(calls) == 3:
            raise KeyboardInterrupt  # interrupted mid-way, like Ctrl-C or kill
        return np.vstack([fake_vector("other " + t) for _, t in rows])

    with pytest.raises(KeyboardInterrupt):
        reembed(store.home, other, flaky, batch=50)
    assert store.model == FAKE_MODEL  # the old model and vectors still serve searches
    assert vector_search(store, fake_vector("x"), 3, Filters())
    added = store.add(NewMemory("added meanwhile"), fake_vector("added meanwhile"), FAKE_MODEL).id
    report = reembed(
        store.home, other, lambda rows: np.vstack([fake_vector("other " + t) for _, t in rows]), batch=50
    )
    assert (report.resumed_from, report.swapped) == (100, True)
    assert report.embedded == 301 - 100
    assert store.model == other
    ((_, blob),) = store.records.vectors_of_memories([added])[added]
    np.testing.assert_allclose(np.frombuffer(blob, dtype="<f4"), fake_vector("other added meanwhile"))
    hits = vector_search(store, fake_vector("other added meanwhile"), 20, Filters())
    assert added in [h.memory.id for h in hits] and cosine(hits[0]) == pytest.approx(1.0, abs=1e-5)
    assert reembed(store.home, other, flaky).swapped is False  # second run: nothing to do
    assert all(check.ok for check in examine(store.home))


def test_doctor_finds_and_repairs_derived_damage(
    populated: tuple[LocalBackend, dict[int, np.ndarray]],
) -> None:
    store, vectors = populated
    store.index_path.write_bytes(b"garbage")
    store.records.conn.execute("DELETE FROM memories_fts WHERE rowid < 10")
    failing = {check.name for check in examine(store.home) if not check.ok}
    assert failing == {"vector index", "keyword index"}
    actions = repair(store.home)
    assert any("vector index" in a for a in actions) and any("keyword" in a for a in actions)
    assert all(check.ok for check in examine(store.home))
    assert search(store, "memory", None, 3, Filters(), mode=SearchMode.KEYWORD).hits
    assert vector_search(store, vectors[5], 1, Filters())[0].memory.id == 5


def test_reembed_stages_every_window_and_force_redoes_the_same_model(
    populated: tuple[LocalBackend, dict[int, np.ndarray]],
) -> None:
    store, _ = populated
    long_id = store.add(
        NewMemory("a long memory"), np.vstack([fake_vector("part one"), fake_vector("part two")]), FAKE_MODEL
    ).id

    def windowed(rows: list[tuple[int, str]]) -> list[np.ndarray]:
        return [np.vstack([fake_vector(f"{t} a"), fake_vector(f"{t} b")]) for _, t in rows]

    assert reembed(store.home, FAKE_MODEL, windowed).swapped is False  # same model: nothing to do
    report = reembed(store.home, FAKE_MODEL, windowed, force=True)
    assert (report.swapped, report.embedded) == (True, 301)
    windows = store.records.vectors_of_memories([long_id])[long_id]
    assert [np.frombuffer(blob, dtype="<f4").tolist() for _, blob in windows] == [
        fake_vector("a long memory a").tolist(),
        fake_vector("a long memory b").tolist(),
    ]
    assert store.records.vector_count() == 2 * 301
    hits = vector_search(store, fake_vector("a long memory b"), 1, Filters())
    assert hits[0].memory.id == long_id and cosine(hits[0]) == pytest.approx(1.0, abs=1e-5)
    assert all(check.ok for check in examine(store.home))


def test_a_lane_scores_rightly_after_a_write_between_its_calls(
    populated: tuple[LocalBackend, dict[int, np.ndarray]],
) -> None:
    """One search's calls share one pass over the exact index; a forget by another thread between
    them moves the index's rows, and the scores must follow (not the rows of before)."""
    store, vectors = populated
    query = _random_unit(np.random.default_rng(99), 1)[0]
    lane = store.vector_lane()
    lane.top(query, 5, Filters())
    store.forget(list(range(1, 101)))
    asked = [150, 200, 250, 300]
    found = dict(lane.cosines(query, asked))
    assert sorted(found) == asked
    for mid in asked:
        assert found[mid] == pytest.approx(float(vectors[mid] @ query), abs=1e-5)


def test_an_exact_index_is_reused_whatever_hnsw_parameters_the_settings_name(
    populated: tuple[LocalBackend, dict[int, np.ndarray]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exact index has no graph: when the store's HNSW settings differ from those its file was
    written with (a store from before a default changed, or set for a later HNSW build), a search
    still reuses the index this process holds instead of reading and checksumming the file again."""
    store, vectors = populated
    query = next(iter(vectors.values()))
    vector_search(store, query, 5, Filters())
    store.records.set_meta("hnsw_ef_search", str(store.settings.hnsw.ef_search + 1))
    loads: list[Path] = []
    original = VectorIndex.load

    def counted(path: Path, dim: int) -> VectorIndex:
        loads.append(path)
        return original(path, dim)

    monkeypatch.setattr(VectorIndex, "load", staticmethod(counted))
    for _ in range(3):
        vector_search(store, query, 5, Filters())
    assert loads == []
