"""What every storage back-end must do, stated through the ``Backend`` protocol only.

Each test runs once per back-end in ``conftest.BACKENDS``. Nothing here looks inside a back-end
(no SQL, no index files): a test that passes for one back-end must pass for every other.
Vectors come from ``remem.testing.fake_vector`` (model ``FAKE_MODEL``) or from a seeded generator.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pytest

from remem.errors import (
    InvalidInputError,
    MemoryNotFoundError,
    ModelChangedError,
    ModelMismatchError,
    StoreError,
)
from remem.reports import Check, ReembedReport, ReindexReport
from remem.testing import FAKE_DIM, FAKE_MODEL, fake_vector
from remem.types import AddResult, Filters, Memory, ModelInfo, NewMemory, text_sha256, utc_now_iso

if TYPE_CHECKING:
    from remem.backends.base import Backend, Scored

TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
OTHER_MODEL = ModelInfo(name="fake-other-model", dim=32, pooling="cls", sha256="e" * 64)
EVERYTHING = Filters()


# --- helpers -------------------------------------------------------------------------------------


def windows_of(text: str, model: ModelInfo = FAKE_MODEL) -> np.ndarray:
    """The one-window (1, dim) vectors of ``text``, as an embedder would give them."""
    return fake_vector(text, model.dim).reshape(1, -1)


def add(backend: Backend, *memories: NewMemory, model: ModelInfo = FAKE_MODEL) -> list[AddResult]:
    """Store memories with their fake vectors in one batch."""
    return backend.add_many(list(memories), [windows_of(m.text, model) for m in memories], model)


def add_one(backend: Backend, text: str, **fields: object) -> int:
    """Store one new memory; its id."""
    (result,) = add(backend, NewMemory(text, **fields))  # type: ignore[arg-type]
    assert not result.duplicate
    return result.id


def unit(rng: np.random.Generator, dim: int = FAKE_DIM) -> np.ndarray:
    vector: np.ndarray = rng.normal(size=dim).astype(np.float32)
    vector /= np.linalg.norm(vector)
    return vector


def all_ids(backend: Backend) -> list[int]:
    return backend.candidate_ids(EVERYTHING)


def ids_of(scored: Sequence[Scored]) -> list[int]:
    return [mid for mid, _ in scored]


def assert_best_first(scored: Sequence[Scored]) -> None:
    scores = [score for _, score in scored]
    assert scores == sorted(scores, reverse=True)
    assert len(set(ids_of(scored))) == len(scored), "a memory appears more than once"


# --- adding and reading back ---------------------------------------------------------------------


def test_add_many_round_trips_every_field(backend: Backend) -> None:
    text = "Grüße aus Köln — naïve café ✓ 日本語のメモ 🚀\n  second line keeps its indent\t"
    before = utc_now_iso()
    (result,) = add(
        backend,
        NewMemory(
            text,
            user="alice",
            conversation="conv-1",
            role="assistant",
            tags=("zeta", "alpha", "zeta", "mid"),
            meta={"source": "chat", "ключ": "значение ✓", "empty": ""},
        ),
    )
    after = utc_now_iso()

    assert result == AddResult(id=result.id, duplicate=False)
    stored = backend.get_many([result.id])[result.id]
    assert stored == Memory(
        id=result.id,
        text=text,
        sha256=text_sha256(text),
        created_at=stored.created_at,
        user="alice",
        conversation="conv-1",
        role="assistant",
        tags=("alpha", "mid", "zeta"),
        meta={"source": "chat", "ключ": "значение ✓", "empty": ""},
        updated_at=None,
    )
    assert TIMESTAMP.fullmatch(stored.created_at), stored.created_at
    assert before <= stored.created_at <= after
    # Every way of reading gives the same memory.
    assert list(backend.iter_all()) == [stored]
    assert list(backend.iter_all(EVERYTHING)) == [stored]
    assert backend.newest(EVERYTHING, 10) == [stored]


def test_memory_without_names_reads_back_as_none(backend: Backend) -> None:
    memory_id = add_one(backend, "a memory with nothing else")
    stored = backend.get_many([memory_id])[memory_id]
    assert (stored.user, stored.conversation, stored.role, stored.tags, stored.meta) == (
        None,
        None,
        None,
        (),
        {},
    )


def test_given_timestamps_are_kept(backend: Backend) -> None:
    memory_id = add_one(
        backend,
        "imported memory",
        created_at="2023-05-06T07:08:09.123Z",
        updated_at="2023-06-01T00:00:00.000Z",
    )
    stored = backend.get_many([memory_id])[memory_id]
    assert (stored.created_at, stored.updated_at) == ("2023-05-06T07:08:09.123Z", "2023-06-01T00:00:00.000Z")


def test_get_many_leaves_out_missing_ids(backend: Backend) -> None:
    first = add_one(backend, "first")
    assert set(backend.get_many([first, 12345])) == {first}
    assert backend.get_many([]) == {}


def test_ids_increase_and_are_never_reused(backend: Backend) -> None:
    ids = [add_one(backend, f"memory number {n}") for n in range(3)]
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert backend.forget([ids[-1]]) == [ids[-1]]
    after_forget = add_one(backend, "added after the newest was forgotten")
    assert after_forget > ids[-1]
    backend.forget([*ids[:-1], after_forget])
    assert all_ids(backend) == []
    assert add_one(backend, "added to an emptied store") > after_forget


def test_an_imported_id_is_kept_only_when_larger_than_every_id_given(backend: Backend) -> None:
    assert add_one(backend, "imported with a high id", id=100) == 100
    following = add_one(backend, "added next")
    assert following > 100
    low = add_one(backend, "imported with a low id", id=50)
    assert low not in (50, 100, following) and low > following


# --- deduplication -------------------------------------------------------------------------------


def test_same_text_user_and_conversation_is_stored_once(backend: Backend) -> None:
    (first,) = add(backend, NewMemory("the same words", user="alice", conversation="c1", tags=("a",)))
    again = add(
        backend,
        NewMemory(
            "the same words", user="alice", conversation="c1", role="other", tags=("b",), meta={"x": "y"}
        ),
    )
    assert again == [AddResult(id=first.id, duplicate=True)]
    assert all_ids(backend) == [first.id]
    assert backend.stats().vectors == 1
    assert backend.get_many([first.id])[first.id].tags == ("a",)  # the duplicate changed nothing
    assert backend.find_duplicate(NewMemory("the same words", user="alice", conversation="c1")) == first.id


def test_another_user_or_conversation_is_not_a_duplicate(backend: Backend) -> None:
    results = add(
        backend,
        NewMemory("the same words", user="alice"),
        NewMemory("the same words", user="bob"),
        NewMemory("the same words", user="alice", conversation="c1"),
        NewMemory("the same words"),
        NewMemory("The same words", user="alice"),  # another text (case matters)
    )
    assert [r.duplicate for r in results] == [False] * 5
    assert len({r.id for r in results}) == 5
    assert backend.find_duplicate(NewMemory("the same words", user="carol")) is None
    assert backend.find_duplicate(NewMemory("the same words")) == results[3].id
    asked = [
        NewMemory("the same words", user="bob"),
        NewMemory("the same words", user="carol"),
        NewMemory("the same words"),
        NewMemory("The same words", user="alice"),
        NewMemory("the same words", user="bob"),
        NewMemory("never stored", user="alice"),
    ]
    found = backend.find_duplicates(asked)
    assert found == [results[1].id, None, results[3].id, results[4].id, results[1].id, None]
    assert found == [backend.find_duplicate(memory) for memory in asked]
    assert backend.find_duplicates([]) == []


def test_duplicates_within_one_batch(backend: Backend) -> None:
    (stored,) = add(backend, NewMemory("already stored"))
    results = add(
        backend,
        NewMemory("new in this batch", user="u"),
        NewMemory("already stored"),
        NewMemory("new in this batch", user="u"),
        NewMemory("new in this batch", user="v"),
    )
    assert results[0].duplicate is False
    assert results[1] == AddResult(id=stored.id, duplicate=True)
    assert results[2] == AddResult(id=results[0].id, duplicate=True)
    assert results[3].duplicate is False and results[3].id != results[0].id
    assert all_ids(backend) == sorted({stored.id, results[0].id, results[3].id})
    assert backend.stats().vectors == 3


# --- the model stamp and malformed batches -------------------------------------------------------


def test_model_stamp_is_recorded_on_first_add(backend: Backend) -> None:
    assert backend.model is None
    backend.check_model(FAKE_MODEL)  # an empty store accepts any model
    backend.check_model(OTHER_MODEL)
    add_one(backend, "the first memory")
    assert backend.model == FAKE_MODEL
    backend.check_model(FAKE_MODEL)
    with pytest.raises(ModelMismatchError):
        backend.check_model(OTHER_MODEL)
    with pytest.raises(ModelMismatchError):
        backend.check_model(replace(FAKE_MODEL, sha256="0" * 64))  # same name, other weights


def test_vectors_of_another_model_are_refused(backend: Backend) -> None:
    first = add_one(backend, "the first memory")
    with pytest.raises(ModelMismatchError):
        add(backend, NewMemory("from another model"), model=OTHER_MODEL)
    with pytest.raises(ModelMismatchError):
        backend.edit(first, "edited by another model", windows_of("edited", OTHER_MODEL), OTHER_MODEL)
    assert all_ids(backend) == [first]
    assert backend.get_many([first])[first].text == "the first memory"
    assert backend.model == FAKE_MODEL


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(np.ones((1, FAKE_DIM - 1), dtype=np.float32), id="too-few-dims"),
        pytest.param(np.ones((2, FAKE_DIM + 3), dtype=np.float32), id="too-many-dims"),
        pytest.param(np.zeros((0, FAKE_DIM), dtype=np.float32), id="no-windows"),
        pytest.param(np.ones((1, 2, FAKE_DIM), dtype=np.float32), id="three-axes"),
    ],
)
def test_a_batch_with_a_misshapen_vector_changes_nothing(backend: Backend, bad: np.ndarray) -> None:
    batch = [NewMemory("fine one"), NewMemory("broken one")]
    with pytest.raises(StoreError):
        backend.add_many(batch, [windows_of("fine one"), bad], FAKE_MODEL)
    assert backend.model is None  # not even the model stamp was recorded
    assert all_ids(backend) == []
    kept = add_one(backend, "stored before the bad batch")
    with pytest.raises(StoreError):
        backend.add_many(batch, [windows_of("fine one"), bad], FAKE_MODEL)
    assert all_ids(backend) == [kept]
    assert backend.find_duplicate(NewMemory("fine one")) is None
    assert backend.stats().memories == 1
    assert backend.stats().vectors == 1


def test_a_batch_with_too_few_vectors_changes_nothing(backend: Backend) -> None:
    with pytest.raises(StoreError):
        backend.add_many([NewMemory("one"), NewMemory("two")], [windows_of("one")], FAKE_MODEL)
    assert all_ids(backend) == []
    assert backend.model is None


# --- filters -------------------------------------------------------------------------------------

FILTER_CORPUS = {
    "alpha": NewMemory(
        "alpha note about deploys",
        user="alice",
        conversation="c1",
        role="user",
        tags=("ops", "deploy"),
        meta={"env": "prod", "team.name": "core"},
        created_at="2024-01-01T00:00:00.000Z",
    ),
    "beta": NewMemory(
        "beta note about the database",
        user="alice",
        conversation="c2",
        role="assistant",
        tags=("db",),
        meta={"env": "dev"},
        created_at="2024-01-02T00:00:00.000Z",
    ),
    "gamma": NewMemory(
        "gamma note about deploy rollbacks",
        user="bob",
        conversation="c1",
        role="user",
        tags=("ops",),
        meta={"env": "prod"},
        created_at="2024-01-02T00:00:00.000Z",  # same moment as beta
    ),
    "delta": NewMemory("delta note with no owner", created_at="2024-01-03T12:00:00.000Z"),
    "epsilon": NewMemory(
        "epsilon note about ops and db",
        user="bob",
        role="assistant",
        tags=("db", "ops"),
        meta={"env": "prod", "team.name": "core"},
        created_at="2024-01-04T00:00:00.000Z",
    ),
    "zeta": NewMemory(
        "zeta note about deploys to prod",
        user="carol",
        conversation="c3",
        tags=("deploy",),
        meta={"env": "prod", "team.name": "edge"},
        created_at="2024-01-04T00:00:00.000Z",  # same moment as epsilon
    ),
}
#: Every memory of the corpus, newest first (same created_at: the later-added, higher id first).
NEWEST_FIRST = ["zeta", "epsilon", "delta", "gamma", "beta", "alpha"]

FILTER_CASES = [
    ("nothing", Filters(), set(FILTER_CORPUS)),
    ("user", Filters(user="alice"), {"alpha", "beta"}),
    ("conversation", Filters(conversation="c1"), {"alpha", "gamma"}),
    ("role", Filters(role="assistant"), {"beta", "epsilon"}),
    ("user-and-role", Filters(user="alice", role="user"), {"alpha"}),
    ("unknown-user", Filters(user="mallory"), set()),
    ("one-tag", Filters(tags=("ops",)), {"alpha", "gamma", "epsilon"}),
    ("all-tags-present", Filters(tags=("db", "ops")), {"epsilon"}),
    ("all-tags-present-2", Filters(tags=("deploy", "ops")), {"alpha"}),
    ("unknown-tag", Filters(tags=("ops", "nosuch")), set()),
    ("meta-pair", Filters(meta=(("env", "prod"),)), {"alpha", "gamma", "epsilon", "zeta"}),
    ("meta-pairs", Filters(meta=(("env", "prod"), ("team.name", "core"))), {"alpha", "epsilon"}),
    ("meta-value-differs", Filters(meta=(("env", "staging"),)), set()),
    ("meta-key-missing", Filters(meta=(("owner", "x"),)), set()),
    (
        "since-inclusive",
        Filters(since="2024-01-02T00:00:00.000Z"),
        {"beta", "gamma", "delta", "epsilon", "zeta"},
    ),
    ("until-exclusive", Filters(until="2024-01-02T00:00:00.000Z"), {"alpha"}),
    (
        "since-until",
        Filters(since="2024-01-02T00:00:00.000Z", until="2024-01-04T00:00:00.000Z"),
        {"beta", "gamma", "delta"},
    ),
    ("between-moments", Filters(since="2024-01-02T00:00:00.001Z", until="2024-01-03T12:00:00.000Z"), set()),
    (
        "everything-at-once",
        Filters(
            user="bob",
            role="assistant",
            tags=("ops",),
            meta=(("env", "prod"),),
            since="2024-01-03T00:00:00.000Z",
            until="2024-01-05T00:00:00.000Z",
        ),
        {"epsilon"},
    ),
]


@pytest.fixture
def corpus(backend: Backend) -> dict[str, int]:
    """The filter corpus stored in order; name → id."""
    results = add(backend, *FILTER_CORPUS.values())
    assert not any(r.duplicate for r in results)
    return dict(zip(FILTER_CORPUS, (r.id for r in results), strict=True))


@pytest.mark.parametrize(
    ("filters", "expected"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_every_read_applies_the_filters(
    backend: Backend, corpus: dict[str, int], filters: Filters, expected: set[str]
) -> None:
    wanted = sorted(corpus[name] for name in expected)
    newest = [corpus[name] for name in NEWEST_FIRST if name in expected]

    assert backend.candidate_ids(filters) == wanted
    assert [m.id for m in backend.iter_all(filters)] == wanted
    assert [m.id for m in backend.newest(filters, 100)] == newest
    assert [m.id for m in backend.newest(filters, 2)] == newest[:2]
    lane = backend.vector_lane()
    assert sorted(ids_of(lane.top(fake_vector("note about deploys"), 100, filters))) == wanted
    assert sorted(ids_of(backend.keyword_top("note", filters, 100))) == wanted  # every text has "note"


@pytest.mark.parametrize(
    "key",
    [
        "team.name",
        "a[0]",
        "$root",
        "with space",
        "back\\slash",
        "ключ",
        'say "hi"',
    ],
)
def test_a_meta_filter_matches_whatever_the_key(backend: Backend, key: str) -> None:
    wanted = add_one(backend, "has the pair", meta={key: "ок", "other": "x"})
    add_one(backend, "has another value", meta={key: "no"})
    add_one(backend, "has no such key", meta={"other": "ок"})
    assert backend.candidate_ids(Filters(meta=((key, "ок"),))) == [wanted]


def test_newest_orders_by_created_at_then_id(backend: Backend, corpus: dict[str, int]) -> None:
    assert [m.id for m in backend.newest(EVERYTHING, 100)] == [corpus[name] for name in NEWEST_FIRST]
    assert [m.id for m in backend.newest(EVERYTHING, 1)] == [corpus["zeta"]]
    assert backend.newest(Filters(user="mallory"), 5) == []


def test_newest_of_memories_added_in_order_is_the_reverse(backend: Backend) -> None:
    ids = [add_one(backend, f"added {n}") for n in range(5)]
    assert [m.id for m in backend.newest(EVERYTHING, 3)] == ids[::-1][:3]


def test_iter_all_streams_in_id_order(backend: Backend, corpus: dict[str, int]) -> None:
    assert [m.id for m in backend.iter_all()] == sorted(corpus.values())
    assert [m.text for m in backend.iter_all()] == [m.text for m in FILTER_CORPUS.values()]


# --- the vector lane -----------------------------------------------------------------------------


def brute_force_top(
    vectors: dict[int, np.ndarray], query: np.ndarray, k: int, among: set[int]
) -> list[tuple[int, float]]:
    """The exact top ``k`` by dot product, a memory scoring as its best window."""
    scores = [(mid, float((vectors[mid] @ query).max())) for mid in among]
    return sorted(scores, key=lambda pair: (-pair[1], pair[0]))[:k]


@pytest.fixture
def random_store(backend: Backend) -> tuple[dict[int, np.ndarray], dict[int, NewMemory]]:
    """60 memories with random unit vectors (every 5th has 3 windows); id → windows, id → memory."""
    rng = np.random.default_rng(20240601)
    memories, windows = [], []
    for n in range(60):
        memories.append(
            NewMemory(
                f"random memory {n}",
                user=f"u{n % 3}",
                tags=(f"t{n % 4}",),
                created_at=f"2024-02-{1 + n % 28:02d}T00:00:00.000Z",
            )
        )
        windows.append(np.stack([unit(rng) for _ in range(3 if n % 5 == 0 else 1)]))
    results = backend.add_many(memories, windows, FAKE_MODEL)
    ids = [r.id for r in results]
    return dict(zip(ids, windows, strict=True)), dict(zip(ids, memories, strict=True))


RANDOM_FILTERS = [
    Filters(),
    Filters(user="u1"),
    Filters(tags=("t0",)),
    Filters(user="u2", tags=("t1",)),
    Filters(since="2024-02-10T00:00:00.000Z", until="2024-02-20T00:00:00.000Z"),
    Filters(user="nobody"),
]
RANDOM_FILTER_IDS = ["none", "user", "tag", "user-and-tag", "since-until", "no-match"]


def _selected(memory: NewMemory, filters: Filters) -> bool:
    created = memory.created_at or ""
    return (
        (filters.user is None or memory.user == filters.user)
        and set(filters.tags) <= set(memory.tags)
        and (filters.since is None or created >= filters.since)
        and (filters.until is None or created < filters.until)
    )


@pytest.mark.parametrize("filters", RANDOM_FILTERS, ids=RANDOM_FILTER_IDS)
def test_vector_top_is_the_exact_top_k_among_filtered_memories(
    backend: Backend, random_store: tuple[dict[int, np.ndarray], dict[int, NewMemory]], filters: Filters
) -> None:
    vectors, memories = random_store
    among = {mid for mid, memory in memories.items() if _selected(memory, filters)}
    assert backend.candidate_ids(filters) == sorted(among)  # the reference agrees with the store
    lane = backend.vector_lane()
    rng = np.random.default_rng(7)
    for _ in range(4):
        query = unit(rng)
        for k in (1, 3, 10, 25, 100):
            got = lane.top(query, k, filters)
            expected = brute_force_top(vectors, query, k, among)
            assert ids_of(got) == ids_of(expected), (k, filters)
            assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-5)
            assert_best_first(got)


def test_vector_cosines_score_each_memory_by_its_best_window(
    backend: Backend, random_store: tuple[dict[int, np.ndarray], dict[int, NewMemory]]
) -> None:
    vectors, _ = random_store
    some = sorted(vectors)[::4]
    query = unit(np.random.default_rng(11))
    got = backend.vector_lane().cosines(query, some)
    expected = brute_force_top(vectors, query, len(some), set(some))
    assert ids_of(got) == ids_of(expected)
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-5)


def toward(query: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector whose dot product with the unit ``query`` is exactly ``cosine``."""
    side = unit(rng, query.size)
    side = side - (side @ query) * query
    side /= np.linalg.norm(side)
    toward_query: np.ndarray = (cosine * query + np.sqrt(1 - cosine**2) * side).astype(np.float32)
    return toward_query


def test_a_memory_scores_as_its_best_window(backend: Backend) -> None:
    rng = np.random.default_rng(3)
    query = unit(rng)
    memories = [
        NewMemory("long memory"),
        NewMemory("near memory"),
        NewMemory("many windows"),
        NewMemory("far"),
    ]
    windows = [
        np.stack([toward(query, 0.0, rng), -query, query, toward(query, 0.5, rng)]),  # best window: 1.0
        toward(query, 0.9, rng).reshape(1, -1),
        np.stack([toward(query, 0.95, rng) for _ in range(6)]),  # six windows at 0.95
        (-query).reshape(1, -1),
    ]
    long_id, near_id, many_id, far_id = (r.id for r in backend.add_many(memories, windows, FAKE_MODEL))

    lane = backend.vector_lane()
    top = lane.top(query, 3, EVERYTHING)
    assert ids_of(top) == [long_id, many_id, near_id]  # many windows, yet one place: still 3 memories
    assert [score for _, score in top] == pytest.approx([1.0, 0.95, 0.9], abs=1e-5)
    everything = lane.top(query, 10, EVERYTHING)
    assert ids_of(everything) == [long_id, many_id, near_id, far_id]
    assert everything[-1][1] == pytest.approx(-1.0, abs=1e-5)
    cosines = lane.cosines(query, [far_id, long_id])
    assert ids_of(cosines) == [long_id, far_id]
    assert [score for _, score in cosines] == pytest.approx([1.0, -1.0], abs=1e-5)


def test_vector_lane_of_a_replaced_model_refuses(backend: Backend) -> None:
    add_one(backend, "something")
    backend.vector_lane()
    backend.vector_lane(embedded_with=FAKE_MODEL)
    with pytest.raises(ModelChangedError):
        backend.vector_lane(embedded_with=OTHER_MODEL)


# --- the keyword lane ----------------------------------------------------------------------------

KEYWORD_CORPUS = {
    "incident": NewMemory(
        "Rolled back deploy 9f3c2ab1d4e5 after the importer failed with E1045.", user="alice"
    ),
    "other-error": NewMemory("The importer failed again with error E1046 during the deploy.", user="bob"),
    "checklist": NewMemory("Deploy checklist: run the importer, then check errors.", user="alice"),
    "other-hash": NewMemory("Deploy 1a2b3c4d5e6f went out on friday; deploy notes in the wiki.", user="bob"),
    "unrelated": NewMemory("Grocery list: milk, eggs and bread.", user="carol"),
}


@pytest.fixture
def keyword_corpus(backend: Backend) -> dict[str, int]:
    results = add(backend, *KEYWORD_CORPUS.values())
    return dict(zip(KEYWORD_CORPUS, (r.id for r in results), strict=True))


@pytest.mark.parametrize(
    "query", ["E1045", "e1045", "importer failed E1045", "9f3c2ab", "deploy 9f3c2ab", "9f3c2ab1d4e5"]
)
def test_keyword_top_ranks_an_exact_identifier_first(
    backend: Backend, keyword_corpus: dict[str, int], query: str
) -> None:
    top = backend.keyword_top(query, EVERYTHING, 10)
    assert top, query
    assert top[0][0] == keyword_corpus["incident"]
    assert keyword_corpus["unrelated"] not in ids_of(top)
    assert_best_first(top)


def test_keyword_top_matches_words_and_respects_k(backend: Backend, keyword_corpus: dict[str, int]) -> None:
    importer = {keyword_corpus[n] for n in ("incident", "other-error", "checklist")}
    assert set(ids_of(backend.keyword_top("importer", EVERYTHING, 10))) == importer
    assert len(backend.keyword_top("importer", EVERYTHING, 2)) == 2
    assert ids_of(backend.keyword_top("groceries milk", EVERYTHING, 10)) == [keyword_corpus["unrelated"]]
    assert backend.keyword_top("nonexistentword", EVERYTHING, 10) == []


def test_keyword_top_respects_filters(backend: Backend, keyword_corpus: dict[str, int]) -> None:
    assert backend.keyword_top("E1045", Filters(user="bob"), 10) == []
    alice = backend.keyword_top("importer", Filters(user="alice"), 10)
    assert sorted(ids_of(alice)) == sorted([keyword_corpus["incident"], keyword_corpus["checklist"]])


def test_keyword_top_among(backend: Backend, keyword_corpus: dict[str, int]) -> None:
    among = [keyword_corpus["other-error"], keyword_corpus["checklist"], keyword_corpus["unrelated"]]
    got = backend.keyword_top("importer failed E1045", EVERYTHING, 10, among=among)
    assert ids_of(got)[0] == keyword_corpus["other-error"]  # matches two of the terms
    assert set(ids_of(got)) == {keyword_corpus["other-error"], keyword_corpus["checklist"]}
    assert ids_of(backend.keyword_top("importer", Filters(user="bob"), 10, among=among)) == [
        keyword_corpus["other-error"]
    ]
    assert backend.keyword_top("importer", EVERYTHING, 10, among=[]) == []


@pytest.mark.parametrize("query", ["", "   ", "the of and", "?!… — ...", "a"])
def test_keyword_top_of_a_query_without_terms_is_empty(
    backend: Backend, keyword_corpus: dict[str, int], query: str
) -> None:
    assert backend.keyword_top(query, EVERYTHING, 10) == []


def test_keyword_coverage_gives_each_memory_its_share_of_the_weight(
    backend: Backend, keyword_corpus: dict[str, int]
) -> None:
    ids = list(keyword_corpus.values())
    query = "importer failed E1045"
    found = {enough: backend.keyword_coverage(query, ids, enough) for enough in (0.01, 0.1, 0.3, 0.5, 1.0)}
    exact = found[1.0].shares
    assert list(exact) == ids  # in the order given
    assert exact[keyword_corpus["incident"]] == pytest.approx(1.0)  # it matches every term
    assert exact[keyword_corpus["unrelated"]] == 0.0
    assert 0 < exact[keyword_corpus["checklist"]] < exact[keyword_corpus["other-error"]] < 1
    for enough, coverage in found.items():  # exact below enough, enough above
        assert coverage.shares == {mid: pytest.approx(min(share, enough)) for mid, share in exact.items()}
        assert coverage.weight == pytest.approx(found[1.0].weight)
    # Shares are weighted by IDF: the rarer "failed" counts more than "importer".
    alone = backend.keyword_coverage("importer failed", ids, 1.0)
    assert alone.shares[keyword_corpus["checklist"]] < 0.5
    assert alone.weight < found[1.0].weight  # without the rare identifier's weight
    assert backend.keyword_coverage("importer", [], 0.2).shares == {}
    nothing = backend.keyword_coverage("the of", ids, 0.2)  # stop words: no terms
    assert nothing.weight == 0.0 and set(nothing.shares.values()) == {0.0}


# --- editing -------------------------------------------------------------------------------------


def test_edit_keeps_id_and_created_at(backend: Backend) -> None:
    memory_id = add_one(backend, "cats sleep on the sofa", user="alice", tags=("pets",), meta={"k": "v"})
    other = add_one(backend, "an unrelated memory about taxes", user="alice")
    before = backend.get_many([memory_id])[memory_id]

    edited = backend.edit(memory_id, "dogs run in the park", windows_of("dogs run in the park"), FAKE_MODEL)

    assert edited == replace(
        before,
        text="dogs run in the park",
        sha256=text_sha256("dogs run in the park"),
        updated_at=edited.updated_at,
    )
    assert edited.updated_at is not None and TIMESTAMP.fullmatch(edited.updated_at)
    assert edited.updated_at >= before.created_at
    assert backend.get_many([memory_id])[memory_id] == edited
    assert all_ids(backend) == [memory_id, other]
    # Every lane sees the new text only.
    assert ids_of(backend.keyword_top("dogs park", EVERYTHING, 10)) == [memory_id]
    assert backend.keyword_top("cats sofa", EVERYTHING, 10) == []
    top = backend.vector_lane().top(fake_vector("dogs run in the park"), 1, EVERYTHING)
    assert ids_of(top) == [memory_id] and top[0][1] == pytest.approx(1.0, abs=1e-5)
    assert backend.vectors_of_memories([memory_id]) == {
        memory_id: [windows_of("dogs run in the park")[0].astype("<f4").tobytes()]
    }
    assert backend.stats().vectors == 2
    # The old text is free again; the new one is taken.
    assert backend.find_duplicate(NewMemory("cats sleep on the sofa", user="alice")) is None
    assert backend.find_duplicate(NewMemory("dogs run in the park", user="alice")) == memory_id


def test_edit_can_take_several_windows(backend: Backend) -> None:
    memory_id = add_one(backend, "short")
    rows = np.stack([fake_vector("first part"), fake_vector("second part")])
    backend.edit(memory_id, "first part second part", rows, FAKE_MODEL)
    assert backend.vectors_of_memories([memory_id])[memory_id] == [
        row.astype("<f4").tobytes() for row in rows
    ]


def test_edit_of_a_missing_memory(backend: Backend) -> None:
    kept = add_one(backend, "kept")
    with pytest.raises(MemoryNotFoundError) as raised:
        backend.edit(kept + 100, "anything", windows_of("anything"), FAKE_MODEL)
    assert raised.value.ids == [kept + 100]
    assert all_ids(backend) == [kept]
    assert backend.keyword_top("anything", EVERYTHING, 5) == []


def test_edit_into_a_text_the_conversation_already_holds(backend: Backend) -> None:
    first = add_one(backend, "first text", user="alice", conversation="c")
    second = add_one(backend, "second text", user="alice", conversation="c")
    elsewhere = add_one(backend, "third text", user="bob", conversation="c")
    with pytest.raises(InvalidInputError):
        backend.edit(second, "first text", windows_of("first text"), FAKE_MODEL)
    assert backend.get_many([second])[second].text == "second text"
    assert backend.get_many([second])[second].updated_at is None
    assert ids_of(backend.keyword_top("second", EVERYTHING, 5)) == [second]
    # Another user's memory may hold the same text.
    edited = backend.edit(elsewhere, "first text", windows_of("first text"), FAKE_MODEL)
    assert edited.text == "first text"
    assert sorted(ids_of(backend.keyword_top("first", EVERYTHING, 5))) == [first, elsewhere]


# --- forgetting ----------------------------------------------------------------------------------


def test_forget_removes_memories_from_every_lane(backend: Backend) -> None:
    texts = ["alpha bravo charlie", "delta echo foxtrot", "golf hotel india", "juliett kilo lima"]
    ids = [add_one(backend, text, user="u", tags=("t",)) for text in texts]

    assert backend.forget([ids[0], ids[2], 99999]) == [ids[0], ids[2]]

    kept = [ids[1], ids[3]]
    assert backend.get_many(ids) == {mid: backend.get_many([mid])[mid] for mid in kept}
    assert all_ids(backend) == kept
    assert backend.candidate_ids(Filters(tags=("t",))) == kept
    assert [m.id for m in backend.iter_all()] == kept
    assert [m.id for m in backend.newest(EVERYTHING, 10)] == kept[::-1]
    assert set(backend.vectors_of_memories(ids)) == set(kept)
    lane = backend.vector_lane()
    assert sorted(ids_of(lane.top(fake_vector(texts[0]), 10, EVERYTHING))) == kept
    assert sorted(ids_of(lane.top(fake_vector(texts[2]), 10, Filters(user="u")))) == kept
    assert backend.keyword_top("alpha bravo golf", EVERYTHING, 10) == []
    assert sorted(ids_of(backend.keyword_top("alpha delta golf juliett", EVERYTHING, 10))) == kept
    assert backend.find_duplicate(NewMemory(texts[0], user="u")) is None
    assert backend.stats().memories == 2
    assert backend.stats().vectors == 2
    # A forgotten text can be added again, under a new id.
    assert add_one(backend, texts[0], user="u") > ids[-1]


def test_forget_of_nothing_that_exists(backend: Backend) -> None:
    kept = add_one(backend, "kept")
    assert backend.forget([kept + 1, kept + 2]) == []
    assert backend.forget([]) == []
    assert all_ids(backend) == [kept]


def test_forget_on_a_store_without_vectors(backend: Backend) -> None:
    assert backend.forget([1, 2]) == []
    assert backend.model is None


# --- vectors, stats, doctor ----------------------------------------------------------------------


def test_vectors_of_memories_are_float32_bytes_in_window_order(backend: Backend) -> None:
    rng = np.random.default_rng(5)
    three = np.stack([unit(rng) for _ in range(3)])
    one = unit(rng).reshape(1, -1)
    long_id, short_id = (
        r.id for r in backend.add_many([NewMemory("long"), NewMemory("short")], [three, one], FAKE_MODEL)
    )
    found = backend.vectors_of_memories([short_id, long_id, 424242])
    assert found == {
        long_id: [row.astype("<f4").tobytes() for row in three],
        short_id: [one[0].astype("<f4").tobytes()],
    }
    assert all(len(blob) == 4 * FAKE_DIM for blobs in found.values() for blob in blobs)
    assert np.frombuffer(found[long_id][1], dtype="<f4") == pytest.approx(three[1])
    assert backend.vectors_of_memories([]) == {}


def test_stats_count_memories_and_vectors(backend: Backend) -> None:
    stats = backend.stats()
    assert (stats.memories, stats.vectors) == (0, 0)
    rng = np.random.default_rng(9)
    backend.add_many(
        [NewMemory("one"), NewMemory("two"), NewMemory("three")],
        [np.stack([unit(rng), unit(rng)]), unit(rng).reshape(1, -1), unit(rng).reshape(1, -1)],
        FAKE_MODEL,
    )
    stats = backend.stats()
    assert (stats.memories, stats.vectors) == (3, 4)


def test_doctor_finds_a_healthy_store_healthy(backend: Backend, corpus: dict[str, int]) -> None:
    backend.forget([corpus["beta"]])
    backend.edit(corpus["gamma"], "gamma edited", windows_of("gamma edited"), FAKE_MODEL)
    checks, repaired = backend.doctor(False)
    assert repaired == []
    assert checks and all(isinstance(check, Check) for check in checks)
    assert [c for c in checks if not c.ok] == []


def test_doctor_of_an_empty_store(backend: Backend) -> None:
    checks, repaired = backend.doctor(False)
    assert repaired == []
    assert [c for c in checks if not c.ok] == []


def test_reindex_keeps_the_lanes_working(backend: Backend, corpus: dict[str, int]) -> None:
    report = backend.reindex(None, (None, None, None), True)
    assert isinstance(report, ReindexReport)
    assert report.vectors == len(corpus)
    top = backend.vector_lane().top(fake_vector(FILTER_CORPUS["delta"].text), 1, EVERYTHING)
    assert ids_of(top) == [corpus["delta"]]
    assert ids_of(backend.keyword_top("rollbacks", EVERYTHING, 5)) == [corpus["gamma"]]


# --- re-embedding --------------------------------------------------------------------------------


def embed_other(rows: Sequence[tuple[int, str]]) -> list[np.ndarray]:
    """OTHER_MODEL's vectors: a FakeEmbedder-style (1, 32) window per (id, text)."""
    return [windows_of(text, OTHER_MODEL) for _, text in rows]


def test_reembed_swaps_the_model_and_the_lanes_keep_working(backend: Backend, corpus: dict[str, int]) -> None:
    calls: list[tuple[int, int]] = []
    report = backend.reembed(OTHER_MODEL, embed_other, lambda done, total: calls.append((done, total)), False)

    assert isinstance(report, ReembedReport)
    assert report.swapped and report.embedded == len(corpus)
    assert calls and calls[-1] == (len(corpus), len(corpus))
    assert backend.model == OTHER_MODEL
    backend.check_model(OTHER_MODEL)
    with pytest.raises(ModelMismatchError):
        backend.check_model(FAKE_MODEL)
    with pytest.raises(ModelChangedError):
        backend.vector_lane(embedded_with=FAKE_MODEL)
    # Memories are untouched; their vectors are the new model's.
    assert [m.text for m in backend.iter_all()] == [m.text for m in FILTER_CORPUS.values()]
    vectors = backend.vectors_of_memories(list(corpus.values()))
    assert vectors[corpus["alpha"]] == [windows_of(FILTER_CORPUS["alpha"].text, OTHER_MODEL)[0].tobytes()]
    assert backend.stats().vectors == len(corpus)
    # The lanes work with the new model.
    lane = backend.vector_lane(embedded_with=OTHER_MODEL)
    top = lane.top(fake_vector(FILTER_CORPUS["delta"].text, OTHER_MODEL.dim), 1, EVERYTHING)
    assert ids_of(top) == [corpus["delta"]] and top[0][1] == pytest.approx(1.0, abs=1e-5)
    on_bob = lane.top(fake_vector(FILTER_CORPUS["delta"].text, OTHER_MODEL.dim), 10, Filters(user="bob"))
    assert sorted(ids_of(on_bob)) == [corpus["gamma"], corpus["epsilon"]]
    assert ids_of(backend.keyword_top("rollbacks", EVERYTHING, 5)) == [corpus["gamma"]]
    # New memories must come from the new model.
    (added,) = add(backend, NewMemory("added after the swap"), model=OTHER_MODEL)
    lane = backend.vector_lane(embedded_with=OTHER_MODEL)  # a lane is as of one moment: take a new one
    assert ids_of(lane.top(fake_vector("added after the swap", OTHER_MODEL.dim), 1, EVERYTHING)) == [added.id]
    with pytest.raises(ModelMismatchError):
        add(backend, NewMemory("from the old model"))
    checks, _ = backend.doctor(False)
    assert [c for c in checks if not c.ok] == []


def test_reembed_to_the_current_model_does_nothing_unless_forced(backend: Backend) -> None:
    add_one(backend, "one memory")
    seen: list[str] = []

    def embed(rows: Sequence[tuple[int, str]]) -> list[np.ndarray]:
        seen.extend(text for _, text in rows)
        return [windows_of(text) for _, text in rows]

    assert backend.reembed(FAKE_MODEL, embed, None, False).swapped is False
    assert seen == []
    assert backend.reembed(FAKE_MODEL, embed, None, True).swapped is True
    assert seen == ["one memory"]
    assert backend.model == FAKE_MODEL


# --- durability ----------------------------------------------------------------------------------


def test_everything_survives_closing_and_reopening(open_backend: Callable[[], Backend]) -> None:
    first = open_backend()
    ids = [r.id for r in add(first, *FILTER_CORPUS.values())]
    first.forget([ids[1]])
    first.edit(ids[0], "alpha edited", windows_of("alpha edited"), FAKE_MODEL)
    memories = list(first.iter_all())
    first.close()
    first.close()  # closing twice is harmless

    again = open_backend()
    assert list(again.iter_all()) == memories
    assert again.model == FAKE_MODEL
    assert ids_of(again.vector_lane().top(fake_vector("alpha edited"), 1, EVERYTHING)) == [ids[0]]
    assert ids_of(again.keyword_top("rollbacks", EVERYTHING, 5)) == [ids[2]]
    assert add_one(again, "after reopening") > ids[-1]


# --- memories waiting for their vectors ---------------------------------------------------------


def test_a_pending_memory_is_found_by_keyword_at_once_and_by_vector_once_attached(backend: Backend) -> None:
    """Stored without vectors it is a memory like any other for reads and the keyword lane; the
    vector lane sees it only after ``attach_vectors``."""
    anchor = add_one(backend, "an embedded note about the kitchen")
    (waiting,) = backend.add_pending([NewMemory("rolled back deploy E7731 of the billing service")])
    assert not waiting.duplicate and waiting.id > anchor
    assert backend.pending_count() == 1
    assert backend.pending(10) == [(waiting.id, "rolled back deploy E7731 of the billing service")]
    assert ids_of(backend.keyword_top("E7731", Filters(), 5)) == [waiting.id]
    query = fake_vector("rolled back deploy E7731 of the billing service")
    assert waiting.id not in ids_of(backend.vector_lane().top(query, 10, Filters()))
    attached = backend.attach_vectors(
        [
            (
                waiting.id,
                "rolled back deploy E7731 of the billing service",
                windows_of("rolled back deploy E7731 of the billing service"),
            )
        ],
        FAKE_MODEL,
    )
    assert attached == [waiting.id] and backend.pending_count() == 0
    assert ids_of(backend.vector_lane().top(query, 1, Filters())) == [waiting.id]


def test_pending_memories_are_deduplicated_like_others(backend: Backend) -> None:
    first = add_one(backend, "the same words")
    again, fresh = backend.add_pending([NewMemory("the same words"), NewMemory("other words")])
    assert (again.id, again.duplicate, fresh.duplicate) == (first, True, False)
    assert backend.add_pending([NewMemory("other words")])[0] == AddResult(fresh.id, True)


def test_attach_skips_memories_edited_or_forgotten_meanwhile(backend: Backend) -> None:
    add_one(backend, "something embedded first")
    edited, forgotten, kept = (
        r.id for r in backend.add_pending([NewMemory(t) for t in ("e one", "f two", "k three")])
    )
    backend.edit(edited, "e one, edited", windows_of("e one, edited"), FAKE_MODEL)  # now has vectors
    backend.forget([forgotten])
    items = [(i, t, windows_of(t)) for i, t in ((edited, "e one"), (forgotten, "f two"), (kept, "k three"))]
    assert backend.attach_vectors(items, FAKE_MODEL) == [kept]
    assert backend.pending_count() == 0
    assert len(backend.vectors_of_memories([edited])[edited]) == 1


def test_a_store_with_only_pending_memories_has_no_model_yet(backend: Backend) -> None:
    backend.add_pending([NewMemory("waiting"), NewMemory("also waiting")])
    assert backend.model is None and backend.pending_count() == 2
    checks, _ = backend.doctor(False)
    vectors = next(c for c in checks if c.name == "vectors")
    assert vectors.ok and "2 waiting to be embedded" in vectors.detail
