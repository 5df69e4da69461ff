"""Shared memories on every back-end: the memories with no user are the team's, and ``user=U,
shared=True`` selects U's and those — in every read (each search mode and both lanes, list, iter,
context, export, forget's selection), filtered in the store before ranking, so other users' memories
that match the query best never crowd them out. Without ``shared`` a user filter keeps to U's own."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import remem
from remem.backends.local import lanes
from remem.core.memories import Memories
from remem.embedders.catalog import ModelCatalog
from remem.errors import InvalidInputError
from remem.testing import FakeEmbedder
from remem.types import Filters, NewMemory

if TYPE_CHECKING:
    from remem.backends.base import Backend

QUERY = "deploy the payment service"
#: More of bob's memories, each a better match for QUERY than any of alice's or the team's, than any
#: lane's pool or hybrid depth (100; PostgreSQL's keyword pool is 200): a filter applied after
#: ranking, or to too small a pool, leaves alice with fewer hits than she has.
BOBS = 240
#: Alice's and the team's memories, oldest first (each names QUERY's words among others).
OWN = [
    ("alice", "alice wrote how we deploy the payment service on fridays, with care and coffee"),
    (None, "team checklist: before you deploy the payment service, freeze the other releases"),
    ("alice", "alice notes the payment service needs a canary when we deploy it at night"),
    (None, "team rule: deploy the payment service only after the database migration ran cleanly"),
    ("alice", "alice keeps the payment service deploy runbook in the ops wiki, section four"),
]


def _stamp(minute: int) -> str:
    return f"2026-03-01T{minute // 60:02d}:{minute % 60:02d}:00.000Z"


@pytest.fixture
def memories(backend: Backend, tmp_path: Path) -> Memories:
    """A store of bob's best matches, alice's and the team's memories (each at its own minute)."""
    store = Memories(backend, ModelCatalog(tmp_path / "models"), embedder=FakeEmbedder())
    bobs = [
        NewMemory(f"deploy the payment service {n}", user="bob", created_at=_stamp(n)) for n in range(BOBS)
    ]
    own = [
        NewMemory(text, user=user, tags=("ops",) if n in (1, 2) else (), created_at=_stamp(BOBS + 7 * n + 3))
        for n, (user, text) in enumerate(OWN)
    ]
    store.add_many([*bobs[:100], own[0], *bobs[100:], *own[1:]])
    return store


def _alice_and_team(store: Memories) -> list[int]:
    """Ids of alice's and the team's memories, ascending (read without the filter under test)."""
    return sorted(m.id for m in store.iter() if m.user in ("alice", None))


def _walk_the_index(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the vector lane rank through its index (with the filter as a selector or in the walk)
    rather than score few candidates exactly."""
    monkeypatch.setattr(lanes, "EXACT_CANDIDATES", 0)
    if hasattr(backend, "exact_candidates"):
        monkeypatch.setattr(backend, "exact_candidates", 0)


@pytest.mark.parametrize("path", ["exact", "index"])
@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
@pytest.mark.parametrize("query", [QUERY, f'"payment service" {QUERY}'], ids=["words", "phrase"])
def test_search_finds_the_users_and_the_shared_memories_never_anothers(
    memories: Memories, backend: Backend, monkeypatch: pytest.MonkeyPatch, mode: str, path: str, query: str
) -> None:
    wanted = _alice_and_team(memories)
    if path == "index":
        _walk_the_index(backend, monkeypatch)
    best = memories.search(query, k=1, mode=mode, dates=False)
    assert [hit.memory.user for hit in best] == ["bob"]  # bob's is the best match of all
    found = memories.search(query, k=10, mode=mode, user="alice", shared=True, dates=False)
    assert sorted(hit.memory.id for hit in found) == wanted
    for k in (1, 3):
        top = memories.search(query, k=k, mode=mode, user="alice", shared=True, dates=False)
        assert [hit.memory.id for hit in top] == [hit.memory.id for hit in found][:k]
    own = memories.search(query, k=10, mode=mode, user="alice", dates=False)
    assert {hit.memory.user for hit in own} == {"alice"} and len(own) == 3  # without shared: hers only


def test_list_pages_through_the_users_and_the_shared_memories_newest_first(memories: Memories) -> None:
    newest_first = [m.id for m in sorted(memories.iter(), key=lambda m: m.created_at, reverse=True)]
    wanted = [i for i in newest_first if i in set(_alice_and_team(memories))]
    assert [m.id for m in memories.list(limit=100, user="alice", shared=True)] == wanted
    pages, until = [], None
    while page := memories.list(limit=2, user="alice", shared=True, until=until):
        pages.append([m.id for m in page])
        until = page[-1].created_at  # every memory has its own minute: until (exclusive) pages
    assert pages == [wanted[0:2], wanted[2:4], wanted[4:5]]
    assert {m.user for m in memories.list(limit=100, user="alice")} == {"alice"}
    assert len(memories.list(limit=100, user="alice")) == 3


def test_count_iter_export_and_context_keep_to_the_user_and_the_shared(memories: Memories) -> None:
    wanted = _alice_and_team(memories)
    assert len(wanted) == len(OWN)
    assert [m.id for m in memories.iter(user="alice", shared=True)] == wanted
    assert [r["id"] for r in memories.export(user="alice", shared=True)] == wanted
    assert sum(1 for _ in memories.iter(where=Filters(user="alice", shared=True))) == len(OWN)
    tagged = [m.id for m in memories.iter(user="alice", shared=True, tags=["ops"])]
    assert tagged == [wanted[1], wanted[2]]  # the other filters still apply to both
    items = memories.context(QUERY, recent=3, similar=10, user="alice", shared=True, dates=False)
    assert {item.memory.id for item in items} == set(wanted)
    assert len(list(memories.iter(user="bob", shared=True))) == BOBS + 2


def test_forget_selects_the_users_and_the_shared_memories(memories: Memories) -> None:
    wanted = _alice_and_team(memories)
    dry = memories.forget(where=Filters.of(user="alice", shared=True), dry_run=True)
    assert [m.id for m in dry.forgotten] == wanted and dry.dry_run
    assert len(list(memories.iter())) == BOBS + len(OWN)  # nothing was forgotten
    gone = memories.forget(where=Filters.of(user="alice", shared=True, tags="ops"))
    assert [m.id for m in gone.forgotten] == [wanted[1], wanted[2]]
    assert len(list(memories.iter(user="bob"))) == BOBS


def test_shared_needs_a_user_and_is_a_flag(memories: Memories) -> None:
    for call in (
        lambda: Filters(shared=True),
        lambda: Filters.of(shared=True, tags="ops"),
        lambda: memories.list(shared=True),
        lambda: memories.search(QUERY, shared=True),
    ):
        with pytest.raises(InvalidInputError) as refused:
            call()
        assert (str(refused.value), refused.value.parameter, refused.value.mentions) == (
            "shared needs user: it adds the memories that have no user to that user's",
            "shared",
            ("user",),
        )
    with pytest.raises(TypeError, match=r"^shared must be True or False, not str$"):
        memories.list(user="alice", shared="yes")
    with pytest.raises(TypeError, match=r"^shared must be True or False, not int$"):
        Filters(user="alice", shared=1)  # type: ignore[arg-type]
    assert Filters(shared=False).is_empty() and not Filters(user="alice", shared=True).is_empty()
    where = Filters(user="alice", shared=True)
    assert len(memories.list(where=where, shared=False)) == len(OWN)  # the default is no keyword
    with pytest.raises(InvalidInputError, match="not both"):
        memories.list(where=where, shared=True)
    assert remem.Filters.of(user="alice", shared=True) == where


@pytest.mark.parametrize("every", [1, 3, 10, 100])
def test_a_filtered_vector_search_is_the_exact_top_k_whatever_share_the_filter_selects(
    backend: Backend, tmp_path: Path, every: int
) -> None:
    """1 in ``every`` of 600 memories is carol's: the vector lane's top k among hers (with and
    without the team's) is exactly what scoring each of them gives, whether the best of the whole
    store decide it (most memories selected) or her memories are listed first (few)."""
    from remem.testing import fake_vector

    store = Memories(backend, ModelCatalog(tmp_path / "models"), embedder=FakeEmbedder())
    users = ["carol" if n % every == 0 else ("dave" if n % 7 else None) for n in range(600)]
    store.add_many(
        [NewMemory(f"note {n} on topic {n % 37} and {n % 11}", user=u) for n, u in enumerate(users)]
    )
    query = "note on topic 5 and 3"
    vector = fake_vector(query)
    for shared in (False, True):
        wanted = {"carol", None} if shared else {"carol"}
        scored = sorted(
            (-float(fake_vector(m.text) @ vector), m.id) for m in store.iter() if m.user in wanted
        )
        for k in (1, 5, 20):
            found = store.search(query, k=k, mode="vector", user="carol", shared=shared)
            assert [hit.memory.id for hit in found] == [mid for _, mid in scored[:k]], (shared, k)


@pytest.mark.parametrize("every", [1, 3, 10, 100])
def test_a_tag_filtered_search_is_the_exact_top_k_whatever_share_the_tags_select(
    backend: Backend, tmp_path: Path, every: int
) -> None:
    """1 in ``every`` of 600 memories holds tag ``t`` and every other one ``u``: with one tag and
    with both, the vector lane's top k is exactly what scoring each selected memory gives, and the
    keyword lane's is the unfiltered BM25 order cut to the selected memories (tags are checked
    without reading the memories, and listed from the tag table when few)."""
    from remem.testing import fake_vector

    store = Memories(backend, ModelCatalog(tmp_path / "models"), embedder=FakeEmbedder())
    tags = [(("t",) if n % every == 0 else ()) + (("u",) if n % 2 == 0 else ()) for n in range(600)]
    store.add_many(
        [NewMemory(f"note {n} on topic {n % 37} and {n % 11}", tags=t) for n, t in enumerate(tags)]
    )
    query = "note on topic 5 and 3"
    vector = fake_vector(query)
    everything = backend.keyword_top(query, Filters(), 600)
    for wanted in (("t",), ("t", "u")):
        holders = {m.id for m in store.iter() if set(wanted) <= set(m.tags)}
        scored = sorted((-float(fake_vector(m.text) @ vector), m.id) for m in store.iter() if m.id in holders)
        for k in (1, 5, 20):
            found = store.search(query, k=k, mode="vector", tags=list(wanted))
            assert [hit.memory.id for hit in found] == [mid for _, mid in scored[:k]], (wanted, k)
        by_keyword = backend.keyword_top(query, Filters(tags=wanted), 20)
        expected = [(mid, score) for mid, score in everything if mid in holders][:20]
        assert in_score_order(by_keyword) == in_score_order(expected), wanted
        some = sorted(holders)[:7] + [mid for mid, _ in everything if mid not in holders][:7]
        among = backend.keyword_top(query, Filters(tags=wanted), 20, among=some)
        assert {mid for mid, _ in among} == set(some) & holders, wanted


def in_score_order(scored: list[tuple[int, float]]) -> list[tuple[float, int]]:
    """(score, id) best first, scores rounded: PostgreSQL sums a BM25 score's terms in no fixed
    order, so equal scores may differ in their last bits and tie in either order."""
    return sorted((-round(score, 9), mid) for mid, score in scored)
