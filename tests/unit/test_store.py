"""LocalBackend behaviour with the fake embedder: round trip, dedup, filters, model stamp."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from helpers import FAKE_DIM, FAKE_MODEL, cosine, fake_vector, vector_search
from remem import AddResult, Filters, Hit, NewMemory
from remem.backends.local import LocalBackend
from remem.errors import ModelMismatchError, StoreError
from remem.types import text_sha256

TEXTS = (
    "the cat sat on the mat",
    "dogs chase cats in the park",
    "quarterly revenue report for the board",
    "python unit tests with pytest and numpy",
    "sqlite write ahead log and checkpoints",
    "faiss inner product index over unit vectors",
    "a cat and a dog sleep on the sofa",
    "café crème brûlée ✓ naïve façade",
    "meeting notes: ship the release on friday",
    "grocery list: milk eggs bread cheese",
)


@pytest.fixture
def store(store_dir: Path) -> Iterator[LocalBackend]:
    with LocalBackend.open(store_dir, create=True) as opened:
        yield opened


def _add(store: LocalBackend, memory: NewMemory) -> AddResult:
    return store.add(memory, fake_vector(memory.text), FAKE_MODEL)


def _row_count(store: LocalBackend) -> int:
    return store.records.count()


def _index_size(store: LocalBackend) -> int:
    return store.vector_index(FAKE_DIM).size


def _unit(rng: np.random.Generator) -> np.ndarray:
    vector = rng.normal(size=FAKE_DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def assert_exact_top_k(
    hits: Sequence[Hit], query: np.ndarray, vectors: dict[int, np.ndarray], candidates: set[int], k: int
) -> None:
    """The hits are a true top-k of ``candidates`` by dot product (ties in any order), best first."""
    brute = sorted((float(vectors[mid] @ query) for mid in candidates), reverse=True)
    expected = min(k, len(candidates))
    ids = [hit.memory.id for hit in hits]
    assert len(hits) == expected
    assert len(set(ids)) == len(ids)
    assert set(ids) <= candidates
    for hit in hits:
        assert cosine(hit) == pytest.approx(float(vectors[hit.memory.id] @ query), abs=1e-5)
    np.testing.assert_allclose([cosine(hit) for hit in hits], brute[:expected], atol=1e-5)


# --- round trip ----------------------------------------------------------------------------------------


def test_round_trip_search_is_exact_top_k(store: LocalBackend) -> None:
    vectors = {_add(store, NewMemory(text)).id: fake_vector(text) for text in TEXTS}
    assert len(vectors) == len(TEXTS)
    for query_text in ("cat on a mat", "revenue report", "unit vectors index", "nothing in common zzz"):
        query = fake_vector(query_text)
        for k in (1, 3, 5, len(TEXTS), 50):
            hits = vector_search(store, query, k, Filters())
            assert_exact_top_k(hits, query, vectors, set(vectors), k)
    assert store.warnings == []


def test_search_for_stored_text_finds_it_first(store: LocalBackend) -> None:
    ids = {text: _add(store, NewMemory(text)).id for text in TEXTS}
    for text in TEXTS:
        (hit,) = vector_search(store, fake_vector(text), 1, Filters())
        assert hit.memory.id == ids[text]
        assert hit.memory.text == text
        assert cosine(hit) == pytest.approx(1.0, abs=1e-5)


def test_search_scores_are_numpy_dot_products_random_vectors(store: LocalBackend) -> None:
    rng = np.random.default_rng(7)
    vectors = {}
    for i in range(40):
        vector = _unit(rng)
        vectors[store.add(NewMemory(f"memory {i}"), vector, FAKE_MODEL).id] = vector
    query = _unit(rng)
    hits = vector_search(store, query, 10, Filters())
    order = sorted(vectors, key=lambda mid: -float(vectors[mid] @ query))[:10]
    assert [hit.memory.id for hit in hits] == order
    np.testing.assert_allclose(
        [cosine(hit) for hit in hits], [float(vectors[mid] @ query) for mid in order], atol=1e-5
    )


def test_search_empty_store_returns_nothing(store: LocalBackend) -> None:
    assert vector_search(store, fake_vector("anything"), 5, Filters()) == []
    assert store.model is None
    assert store.warnings == []


def test_add_returns_increasing_ids_and_fields_round_trip(store: LocalBackend) -> None:
    meta = {"source": "unit=test", "ключ": "значение ✓", "emoji": "🧠", "empty": ""}
    first = _add(store, NewMemory("plain text"))
    second = _add(
        store,
        NewMemory(
            "naïve café ✓ 日本語",
            user="alice",
            conversation="conv-1",
            role="assistant",
            tags=("zeta", "alpha", "zeta", "mid"),
            meta=meta,
        ),
    )
    assert first == AddResult(id=first.id, duplicate=False)
    assert second.id > first.id
    assert not second.duplicate

    plain, rich = store.iter_all()
    assert (plain.id, rich.id) == (first.id, second.id)
    assert plain.user is None and plain.conversation is None and plain.role is None
    assert plain.tags == () and plain.meta == {}
    assert rich.text == "naïve café ✓ 日本語"
    assert rich.sha256 == text_sha256(rich.text)
    assert (rich.user, rich.conversation, rich.role) == ("alice", "conv-1", "assistant")
    assert rich.tags == ("alpha", "mid", "zeta")
    assert rich.meta == meta
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", rich.created_at)

    # the same Memory comes back from search
    (hit,) = vector_search(store, fake_vector(rich.text), 1, Filters())
    assert hit.memory == rich


def test_newest_first_and_limit(store: LocalBackend) -> None:
    ids = [_add(store, NewMemory(text)).id for text in TEXTS]
    assert [m.id for m in store.newest(Filters(), 100)] == ids[::-1]
    assert [m.id for m in store.newest(Filters(), 3)] == ids[::-1][:3]


def test_newest_orders_by_created_at_not_id(store: LocalBackend) -> None:
    ids = [_add(store, NewMemory(text)).id for text in TEXTS[:4]]
    store.records.conn.execute(
        "UPDATE memories SET created_at = '2999-01-01T00:00:00.000Z' WHERE id = ?", (ids[1],)
    )
    store.records.conn.execute(
        "UPDATE memories SET created_at = '1999-01-01T00:00:00.000Z' WHERE id = ?", (ids[3],)
    )
    assert [m.id for m in store.newest(Filters(), 10)] == [ids[1], ids[2], ids[0], ids[3]]


def test_iter_all_in_id_order(store: LocalBackend) -> None:
    ids = [_add(store, NewMemory(text)).id for text in TEXTS]
    memories = list(store.iter_all())
    assert [m.id for m in memories] == sorted(ids) == ids
    assert [m.text for m in memories] == list(TEXTS)


def test_wrong_vector_shape_is_rejected(store: LocalBackend) -> None:
    with pytest.raises(StoreError, match="shape"):
        store.add(NewMemory("x"), np.zeros(FAKE_DIM + 1, dtype=np.float32), FAKE_MODEL)
    assert _row_count(store) == 0
    assert store.model is None


def test_store_reopens_with_same_content(store_dir: Path) -> None:
    with LocalBackend.open(store_dir, create=True) as store:
        ids = [_add(store, NewMemory(text, user="u")).id for text in TEXTS]
    with LocalBackend.open(store_dir, create=False) as store:
        assert [m.id for m in store.iter_all()] == ids
        assert store.model == FAKE_MODEL
        (hit,) = vector_search(store, fake_vector(TEXTS[4]), 1, Filters())
        assert hit.memory.id == ids[4]
        assert store.warnings == []


# --- dedup ---------------------------------------------------------------------------------------------


def test_duplicate_returns_first_id_and_adds_nothing(store: LocalBackend) -> None:
    first = _add(store, NewMemory("remember the milk", user="u", conversation="c", tags=("a",)))
    _add(store, NewMemory("something else", user="u", conversation="c"))
    rows, size = _row_count(store), _index_size(store)
    again = store.add(
        NewMemory("remember the milk", user="u", conversation="c", tags=("b",), meta={"k": "v"}),
        fake_vector("a different vector entirely"),
        FAKE_MODEL,
    )
    assert again == AddResult(id=first.id, duplicate=True)
    assert _row_count(store) == rows
    assert _index_size(store) == size
    (memory,) = [m for m in store.iter_all() if m.id == first.id]
    assert memory.tags == ("a",) and memory.meta == {}


def test_duplicate_without_user_or_conversation(store: LocalBackend) -> None:
    first = _add(store, NewMemory("no owner"))
    assert _add(store, NewMemory("no owner")) == AddResult(id=first.id, duplicate=True)
    assert _row_count(store) == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("alice", None), ("bob", None)),
        (("alice", None), (None, None)),
        ((None, "c1"), (None, "c2")),
        (("alice", "c1"), ("alice", None)),
        (("alice", "c1"), ("alice", "c2")),
    ],
)
def test_same_text_other_user_or_conversation_is_new(
    store: LocalBackend, first: tuple[str | None, str | None], second: tuple[str | None, str | None]
) -> None:
    one = _add(store, NewMemory("shared text", user=first[0], conversation=first[1]))
    two = _add(store, NewMemory("shared text", user=second[0], conversation=second[1]))
    assert not two.duplicate
    assert two.id != one.id
    assert _row_count(store) == 2
    assert _index_size(store) == 2


def test_role_and_tags_do_not_split_duplicates(store: LocalBackend) -> None:
    first = _add(store, NewMemory("t", user="u", role="user", tags=("x",)))
    second = _add(store, NewMemory("t", user="u", role="assistant", tags=("y",)))
    assert second == AddResult(id=first.id, duplicate=True)


def test_text_differing_only_in_case_is_not_duplicate(store: LocalBackend) -> None:
    first = _add(store, NewMemory("Hello"))
    assert _add(store, NewMemory("hello")).id != first.id


def test_find_duplicate(store: LocalBackend) -> None:
    assert store.find_duplicate(NewMemory("x")) is None
    first = _add(store, NewMemory("x", user="u", conversation="c"))
    assert store.find_duplicate(NewMemory("x", user="u", conversation="c", tags=("t",))) == first.id
    assert store.find_duplicate(NewMemory("x", user="u")) is None
    assert store.find_duplicate(NewMemory("x", conversation="c")) is None
    assert store.find_duplicate(NewMemory("x")) is None
    assert store.find_duplicate(NewMemory("y", user="u", conversation="c")) is None
    plain = _add(store, NewMemory("x"))
    assert store.find_duplicate(NewMemory("x")) == plain.id


# --- filters -------------------------------------------------------------------------------------------

USERS = ("alice", "bob", "carol", None)
CONVERSATIONS = ("c1", "c2", None)
TAGS = ("red", "green", "blue", "rare")


@pytest.fixture(scope="module")
def populated(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LocalBackend, dict[int, np.ndarray], dict[int, NewMemory]]]:
    """~200 random memories spread over users, conversations and tags, with random unit vectors."""
    rng = np.random.default_rng(2024)
    directory = tmp_path_factory.mktemp("populated") / "store"
    store = LocalBackend.open(directory, create=True)
    vectors: dict[int, np.ndarray] = {}
    memories: dict[int, NewMemory] = {}
    for i in range(200):
        tags = tuple(t for t in TAGS[:3] if rng.random() < 0.4)
        if i % 50 == 0:
            tags = (*tags, "rare")
        memory = NewMemory(
            f"random memory number {i}",
            user=USERS[int(rng.integers(len(USERS)))],
            conversation=CONVERSATIONS[int(rng.integers(len(CONVERSATIONS)))],
            tags=tags,
        )
        vector = _unit(rng)
        result = store.add(memory, vector, FAKE_MODEL)
        assert not result.duplicate
        vectors[result.id], memories[result.id] = vector, memory
    yield store, vectors, memories
    store.close()


def _matches(memory: NewMemory, filters: Filters) -> bool:
    return (
        (filters.user is None or memory.user == filters.user)
        and (filters.conversation is None or memory.conversation == filters.conversation)
        and set(filters.tags) <= set(memory.tags)
    )


FILTER_CASES = [
    Filters(),
    Filters(user="alice"),
    Filters(user="bob", conversation="c2"),
    Filters(conversation="c1"),
    Filters(tags=("red",)),
    Filters(tags=("red", "blue")),
    Filters(tags=("blue", "red", "green")),
    Filters(user="carol", tags=("green",)),
    Filters(tags=("rare",)),
    Filters(user="alice", conversation="c1", tags=("red", "green")),
]


@pytest.mark.parametrize("filters", FILTER_CASES)
def test_filtered_search_is_true_top_k_among_matching(
    populated: tuple[LocalBackend, dict[int, np.ndarray], dict[int, NewMemory]], filters: Filters
) -> None:
    store, vectors, memories = populated
    candidates = {mid for mid, memory in memories.items() if _matches(memory, filters)}
    assert candidates, "test data should match every case"
    rng = np.random.default_rng(FILTER_CASES.index(filters))
    for _ in range(3):
        query = _unit(rng)
        hits = vector_search(store, query, 5, filters)
        assert_exact_top_k(hits, query, vectors, candidates, 5)
        order = sorted(candidates, key=lambda mid: -float(vectors[mid] @ query))[:5]
        assert [hit.memory.id for hit in hits] == order  # random vectors: no ties
        for hit in hits:
            assert _matches(memories[hit.memory.id], filters)
    assert store.warnings == []


def test_filtered_search_returns_all_when_fewer_than_k_match(
    populated: tuple[LocalBackend, dict[int, np.ndarray], dict[int, NewMemory]],
) -> None:
    store, vectors, memories = populated
    filters = Filters(tags=("rare",))
    candidates = {mid for mid, memory in memories.items() if "rare" in memory.tags}
    assert len(candidates) == 4
    query = _unit(np.random.default_rng(0))
    hits = vector_search(store, query, 10, filters)
    assert {hit.memory.id for hit in hits} == candidates
    assert_exact_top_k(hits, query, vectors, candidates, 10)


def test_filter_matching_nothing_returns_empty(
    populated: tuple[LocalBackend, dict[int, np.ndarray], dict[int, NewMemory]],
) -> None:
    store, _, _ = populated
    query = _unit(np.random.default_rng(1))
    assert vector_search(store, query, 5, Filters(user="nobody")) == []
    assert vector_search(store, query, 5, Filters(tags=("red", "no-such-tag"))) == []
    assert store.newest(Filters(conversation="nope"), 10) == []
    assert list(store.iter_all(Filters(tags=("no-such-tag",)))) == []


@pytest.mark.parametrize("filters", FILTER_CASES)
def test_filtered_newest_and_iter_all(
    populated: tuple[LocalBackend, dict[int, np.ndarray], dict[int, NewMemory]], filters: Filters
) -> None:
    store, _, memories = populated
    expected = sorted(mid for mid, memory in memories.items() if _matches(memory, filters))
    assert [m.id for m in store.iter_all(filters)] == expected
    assert [m.id for m in store.newest(filters, 1000)] == expected[::-1]
    assert [m.id for m in store.newest(filters, 3)] == expected[::-1][:3]
    for memory in store.iter_all(filters):
        assert set(filters.tags) <= set(memory.tags)


def test_min_score_drops_hits_below_it(
    populated: tuple[LocalBackend, dict[int, np.ndarray], dict[int, NewMemory]],
) -> None:
    """min_score is on the shown (calibrated) scale: a prefix of the ranking is kept."""
    store, _, _ = populated
    query = _unit(np.random.default_rng(5))
    unfiltered = vector_search(store, query, 20, Filters())
    threshold = (unfiltered[4].score + unfiltered[5].score) / 2
    hits = vector_search(store, query, 20, Filters(), min_score=threshold)
    assert [h.memory.id for h in hits] == [h.memory.id for h in unfiltered[:5]]
    assert all(h.score >= threshold for h in hits)
    assert vector_search(store, query, 20, Filters(), min_score=1.0) == []
    everything = vector_search(store, query, 20, Filters(), min_score=0.0)
    assert [h.memory.id for h in everything] == [h.memory.id for h in unfiltered]
    top_score = unfiltered[0].score
    assert len(vector_search(store, query, 20, Filters(), min_score=top_score - 1e-9)) == 1


# --- model stamp ---------------------------------------------------------------------------------------


def test_first_add_records_model(store: LocalBackend) -> None:
    assert store.model is None
    store.check_model(dataclasses.replace(FAKE_MODEL, name="anything"))  # empty store accepts any
    _add(store, NewMemory("first"))
    assert store.model == FAKE_MODEL
    store.check_model(FAKE_MODEL)


@pytest.mark.parametrize(
    "change",
    [{"name": "other-model"}, {"dim": FAKE_DIM // 2}, {"sha256": "0" * 64}, {"pooling": "cls"}],
)
def test_other_model_is_refused_and_changes_nothing(store: LocalBackend, change: dict[str, object]) -> None:
    _add(store, NewMemory("first"))
    other = dataclasses.replace(FAKE_MODEL, **change)  # type: ignore[arg-type]
    rows, size = _row_count(store), _index_size(store)
    index_bytes = store.index_path.read_bytes()
    with pytest.raises(ModelMismatchError) as info:
        store.add(NewMemory("second"), fake_vector("second", other.dim), other)
    assert FAKE_MODEL.name in str(info.value)
    assert _row_count(store) == rows
    assert _index_size(store) == size
    assert store.index_path.read_bytes() == index_bytes
    assert store.model == FAKE_MODEL
    with pytest.raises(ModelMismatchError):
        store.check_model(other)
    # the right model still works
    assert not _add(store, NewMemory("second")).duplicate
