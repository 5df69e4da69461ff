"""A search's scope on every back-end: the memories a caller may see are the only ones it finds, and
the only ones whose statistics its scores count (how many memories there are and hold each word,
their mean length, which words are near-zero-IDF, coverage), so another user's memories never move
its scores; and every back-end searches the same first ``MAX_QUERY_TERMS`` terms of a long query."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from remem.backends import bounds
from remem.backends.analyzer import MAX_QUERY_TERMS, analyze
from remem.core.memories import Memories
from remem.embedders.catalog import ModelCatalog
from remem.errors import InvalidInputError
from remem.reports import SearchResult
from remem.testing import FakeEmbedder
from remem.types import Filters, NewMemory

if TYPE_CHECKING:
    from remem.backends.base import Backend

ALICE = Filters.of(user="alice", shared=True)
#: Alice's and the team's memories: "zebra" is the word she guesses, "giraffe" her control word.
SEEN = [
    NewMemory("alice keeps the zebra key in the blue drawer", user="alice", conversation="c1"),
    NewMemory("alice feeds the giraffe at noon", user="alice", conversation="c1"),
    NewMemory("alice painted a zebra and a giraffe", user="alice", conversation="c2"),
    NewMemory("team note: the giraffe enclosure closes early", conversation="c1"),
    NewMemory("team note: deploys wait for the zebra review", conversation="c2"),
]
#: Bob's memories: the word alice guesses, many long texts, another conversation.
BOBS = [
    *(NewMemory(f"bob saw a zebra number {n}", user="bob") for n in range(30)),
    *(NewMemory("bob " + " ".join(f"word{n}x{i}" for i in range(60)), user="bob") for n in range(5)),
    NewMemory("carol's giraffe zebra notes", user="carol", conversation="c9"),
]
QUERIES = ["zebra", "giraffe", "zebra giraffe drawer", "team note zebra"]


def _store(backend: Backend, tmp_path: Path) -> Memories:
    store = Memories(backend, ModelCatalog(tmp_path / "models"), embedder=FakeEmbedder())
    store.add_many(SEEN)
    return store


def _shown(found: SearchResult) -> list[tuple[int, float, object, object]]:
    return [(hit.memory.id, hit.score, hit.keyword, hit.vector) for hit in found]


def _searches(
    store: Memories, **how: object
) -> dict[tuple[str, str], list[tuple[int, float, object, object]]]:
    return {
        (query, mode): _shown(store.search(query, k=10, mode=mode, dates=False, **how))  # type: ignore[arg-type]
        for query in QUERIES
        for mode in ("keyword", "hybrid")
    }


@pytest.fixture
def few_holders(monkeypatch: pytest.MonkeyPatch) -> None:
    """Near-zero-IDF terms left out from a few holders on: bob's 30 "zebra"s make it one store-wide."""
    monkeypatch.setattr(bounds, "COMMON_HOLDERS", 3)


@pytest.mark.usefixtures("few_holders")
def test_other_users_memories_never_move_a_scoped_search(backend: Backend, tmp_path: Path) -> None:
    store = _store(backend, tmp_path)
    scoped, filtered = _searches(store, scope=ALICE), _searches(store, where=ALICE)
    store.add_many(BOBS)
    assert _searches(store, scope=ALICE) == scoped  # scores, ranks and lanes: bit for bit
    # the owner's ordinary filter counts the whole store: there bob's memories do move the scores
    assert _searches(store, where=ALICE) != filtered
    for conversation in ("c1", "c2"):
        pinned = Filters.of(user="alice", conversation=conversation, shared=True)
        before = _searches(store, scope=pinned)
        store.add_many(
            [NewMemory(f"alice zebra giraffe elsewhere {conversation}", user="alice", conversation="c7")]
        )
        assert _searches(store, scope=pinned) == before


def test_a_scope_scores_as_a_store_of_its_memories_alone(
    open_backend: Callable[..., Backend], tmp_path: Path
) -> None:
    alone = _store(open_backend("alone"), tmp_path)  # only alice's and the team's memories
    shared = _store(open_backend("shared"), tmp_path)  # the same ids, then bob's and carol's
    shared.add_many(BOBS)
    for (query, mode), hits in _searches(shared, scope=ALICE).items():
        whole = _shown(alone.search(query, k=10, mode=mode, dates=False))
        assert [hit[0] for hit in hits] == [hit[0] for hit in whole], (query, mode)
        assert [hit[1] for hit in hits] == pytest.approx([hit[1] for hit in whole], rel=1e-9), (query, mode)


def test_a_scope_bounds_what_a_search_finds(backend: Backend, tmp_path: Path) -> None:
    store = _store(backend, tmp_path)
    store.add_many(BOBS)
    for mode in ("keyword", "hybrid", "vector"):
        found = store.search("zebra giraffe", k=50, mode=mode, scope=ALICE)
        assert {hit.memory.user for hit in found} == {"alice", None}, mode
        own = store.search("zebra giraffe", k=50, mode=mode, user="alice", scope=ALICE)
        assert {hit.memory.user for hit in own} == {"alice"}, mode
    with pytest.raises(InvalidInputError, match="outside the search's scope"):
        store.search("zebra", user="bob", scope=ALICE)
    with pytest.raises(InvalidInputError, match="user, shared and conversation only"):
        store.search("zebra", scope=Filters.of(user="alice", tags=["ops"]))


def test_every_back_end_searches_the_same_first_terms_of_a_long_query(
    backend: Backend, tmp_path: Path
) -> None:
    words = [f"term{n:03d}" for n in range(3 * MAX_QUERY_TERMS)]
    assert analyze(" ".join(words)) == words
    store = Memories(backend, ModelCatalog(tmp_path / "models"), embedder=FakeEmbedder())
    last, beyond = (store.add(f"only {word}") for word in words[MAX_QUERY_TERMS - 1 : MAX_QUERY_TERMS + 1])
    found = store.search(" ".join(words), k=10, mode="keyword")
    assert [hit.memory.id for hit in found] == [last.id]
    cjk = "".join(chr(0x4E00 + n) for n in range(10_000))  # 9,999 distinct bigrams
    held = store.add(f"holds {cjk[:2]} and {cjk[500:502]}")
    assert [hit.memory.id for hit in store.search(cjk, k=10, mode="keyword")] == [held.id]
    hybrid = {hit.memory.id: hit.keyword for hit in store.search(" ".join(words), k=10, mode="hybrid")}
    assert hybrid[last.id] is not None and hybrid[beyond.id] is None  # found by meaning alone
