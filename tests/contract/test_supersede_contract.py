"""Memories that change, on every back-end: a memory added with ``supersedes`` retires the old one
in the same transaction (every read leaves it out unless asked), the rules of a link refuse and
store nothing, forgetting splices chains, and export → import keeps every link
(``remem.backends.links``, ``remem.core.superseding``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from remem import Filters, Memories, NewMemory
from remem.backends.links import Link
from remem.backends.local import LocalBackend
from remem.core.opening import model_catalog
from remem.errors import InvalidInputError, MemoryNotFoundError
from remem.testing import FakeEmbedder

if TYPE_CHECKING:
    from remem.backends.base import Backend

OLD = "the deploy window opens at nine for the payments service"
NEW = "the deploy window opens at ten for the payments service"
NEWEST = "the deploy window opens at eleven for the payments service"
OTHER = "the office coffee machine is broken again"


def _memories(backend: Backend) -> Memories:
    return Memories(backend, model_catalog(environ={}), FakeEmbedder())


@pytest.fixture
def memories(backend: Backend) -> Memories:
    """A Memories over a new, empty store of each back-end."""
    return _memories(backend)


def every_id(memories: Memories) -> set[int]:
    """Every memory stored, hidden or not."""
    return {m.id for m in memories.iter(include_superseded=True, include_expired=True)}


def found_by(memories: Memories, query: str = "deploy window opens", **filters: Any) -> dict[str, set[int]]:
    """The ids each read path finds among the memories ``filters`` select: every search mode, a
    quoted phrase (the ``among`` path of every mode), list, iter and context."""
    paths: dict[str, Callable[[], list[int]]] = {
        f"search {mode}": lambda mode=mode: [
            h.memory.id for h in memories.search(query, k=20, mode=mode, **filters)
        ]
        for mode in ("vector", "keyword", "hybrid")
    }
    for mode in ("vector", "keyword", "hybrid"):
        paths[f"phrase {mode}"] = lambda mode=mode: [
            h.memory.id for h in memories.search(f'"{query}"', k=20, mode=mode, **filters)
        ]
    paths["list"] = lambda: [m.id for m in memories.list(**filters)]
    paths["iter"] = lambda: [m.id for m in memories.iter(**filters)]
    paths["context"] = lambda: [item.memory.id for item in memories.context(query, **filters)]
    paths["context similar"] = lambda: [
        item.memory.id for item in memories.context(query, recent=0, similar=10, **filters)
    ]
    return {name: set(path()) for name, path in paths.items()}


FILTERS: list[dict[str, Any]] = [
    {},
    {"tags": ["ops"]},
    {"user": "alice"},
    {"user": "alice", "shared": True},
    {"user": "alice", "tags": ["ops"], "role": "user"},
    {"since": "2000-01-01"},
]


@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: ",".join(f) or "none")
def test_a_superseded_memory_leaves_every_read_unless_included(
    memories: Memories, filters: dict[str, Any]
) -> None:
    fields = {"user": "alice", "tags": ["ops"], "role": "user"}
    old = memories.add(OLD, **fields).id
    memories.add(OTHER, **fields)
    new = memories.add(NEW, supersedes=old, **fields).id
    for path, ids in found_by(memories, **filters).items():
        assert new in ids and old not in ids, path
    for path, ids in found_by(memories, include_superseded=True, **filters).items():
        assert {old, new} <= ids, path
    assert old in {h.memory.id for h in memories.search(OLD, k=1, mode="vector", include_superseded=True)}


def test_get_and_history_show_the_link_both_ways(memories: Memories) -> None:
    old = memories.add(OLD).id
    new = memories.add(NEW, supersedes=old).id
    newest = memories.add(NEWEST, supersedes=new).id
    first, second, third = memories.get(old), memories.get(new), memories.get(newest)
    assert (first.superseded_by, second.superseded_by, third.superseded_by) == (new, newest, None)
    assert first.superseded_at is not None and second.superseded_at is not None
    assert third.superseded_at is None
    assert first.superseded_at >= first.created_at
    for member in (old, new, newest):
        assert [m.id for m in memories.history(member)] == [old, new, newest]
    lone = memories.add(OTHER).id
    assert [m.id for m in memories.history(lone)] == [lone]
    with pytest.raises(MemoryNotFoundError):
        memories.history(newest + 100)


def test_a_memory_may_supersede_several(memories: Memories) -> None:
    first = memories.add("the deploy window opens at nine").id
    second = memories.add("the deploy window closes at five").id
    merged = memories.add("the deploy window is nine to five", supersedes=first).id
    with pytest.raises(MemoryNotFoundError):  # one add names one memory; a second via the same text
        memories.add("the deploy window is nine to five", supersedes=second + 100)
    assert memories.add("the deploy window is nine to five", supersedes=second).id == merged
    assert [m.id for m in memories.history(merged)] == [first, second, merged]
    assert [m.id for m in memories.list()] == [merged]


def _refusals(memories: Memories) -> dict[str, tuple[dict[str, Any], type[Exception], str]]:
    """Each refused add (its arguments), the error it raises and words of its message."""
    mine = memories.add(OLD, user="alice", conversation="c1").id
    taken = memories.add("a fact that was corrected", user="alice", conversation="c1").id
    newer = memories.add("the corrected fact", user="alice", conversation="c1", supersedes=taken).id
    same = {"user": "alice", "conversation": "c1"}
    return {
        "missing": ({"supersedes": newer + 50, **same}, MemoryNotFoundError, f"no memory {newer + 50}"),
        "other user": (
            {"user": "bob", "conversation": "c1", "supersedes": mine},
            InvalidInputError,
            "same user",
        ),
        "other conversation": (
            {"user": "alice", "conversation": "c2", "supersedes": mine},
            InvalidInputError,
            "same user and conversation",
        ),
        "already superseded": (
            {"supersedes": taken, **same},
            InvalidInputError,
            f"already superseded by memory {newer}",
        ),
        "itself": ({"text": OLD, "supersedes": mine, **same}, InvalidInputError, "itself"),
    }


@pytest.mark.parametrize("embed", [True, False], ids=["embedded", "pending"])
@pytest.mark.parametrize(
    "case", ["missing", "other user", "other conversation", "already superseded", "itself"]
)
def test_a_refused_supersede_stores_nothing(memories: Memories, case: str, embed: bool) -> None:
    arguments, error, words = _refusals(memories)[case]
    before = {m.id: m for m in memories.iter(include_superseded=True, include_expired=True)}
    pending = memories.pending_count()
    with pytest.raises(error, match=words) as caught:
        memories.add(**{"text": NEW, **arguments}, embed=embed)
    if type(caught.value) is InvalidInputError:
        assert caught.value.parameter == "supersedes"
    after = {m.id: m for m in memories.iter(include_superseded=True, include_expired=True)}
    assert after == before and memories.pending_count() == pending
    assert NEW not in [h.memory.text for h in memories.search(NEW, mode="keyword", include_superseded=True)]


def test_adding_the_same_supersede_again_changes_nothing(memories: Memories) -> None:
    old = memories.add(OLD).id
    first = memories.add(NEW, supersedes=old)
    again = memories.add(NEW, supersedes=old)
    pending = memories.add(NEW, supersedes=old, embed=False)
    assert not first.duplicate and again.duplicate and pending.duplicate
    assert first.id == again.id == pending.id
    assert memories.get(old).superseded_by == first.id
    assert len(every_id(memories)) == 2


def test_a_duplicate_text_with_supersedes_links_the_memory_that_holds_it(memories: Memories) -> None:
    old = memories.add(OLD).id
    stored = memories.add(NEW).id  # said already, without the link
    linked = memories.add(NEW, supersedes=old)
    assert linked.id == stored and linked.duplicate
    assert memories.get(old).superseded_by == stored
    assert [m.id for m in memories.list()] == [stored]


def test_a_duplicate_forgotten_before_its_supersede_is_written_is_stored_with_its_vectors(
    memories: Memories, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the duplicate check loses: it finds the text stored, a forget deletes that memory,
    then the add stores the text anew (with the link). It is embedded, not left waiting."""
    old = memories.add(OLD).id
    stale = memories.add(NEW).id
    memories.forget([stale])
    monkeypatch.setattr(memories.backend, "find_duplicate", lambda memory: stale)  # as read before the forget
    added = memories.add(NEW, supersedes=old)
    assert not added.duplicate and added.id != stale
    assert memories.get(old).superseded_by == added.id
    assert memories.pending_count() == 0
    assert [h.memory.id for h in memories.search(NEW, k=1, mode="vector")] == [added.id]


def test_the_links_an_import_writes_are_all_or_none_and_need_both_memories(
    memories: Memories, backend: Backend
) -> None:
    """``Backend.supersede`` (an import's links, found by content before its transaction): a link
    to a memory forgotten meanwhile is refused, and so is the whole batch."""
    old, other, gone = (memories.add(text).id for text in (OLD, OTHER, NEWEST))
    new = memories.add(NEW).id
    memories.forget([gone])
    at = "2026-01-02T03:04:05.000Z"
    with pytest.raises(MemoryNotFoundError, match=f"no memory {gone}"):
        backend.supersede([Link(old, new, None, None, at), Link(other, gone, None, None, at)])
    assert _links(memories) == {old: None, other: None, new: None}
    backend.supersede([Link(old, new, None, None, at)])
    backend.supersede([Link(old, new, None, None, at)])  # there already: nothing to do
    assert memories.get(old).superseded_by == new and memories.get(old).superseded_at == at


# --- forgetting splices chains -----------------------------------------------------------------------


def _chain(memories: Memories, length: int = 3, **fields: Any) -> list[int]:
    texts = [OLD, NEW, NEWEST, "the deploy window opens at noon for the payments service"][:length]
    ids = [memories.add(texts[0], **fields).id]
    for text in texts[1:]:
        ids.append(memories.add(text, supersedes=ids[-1], **fields).id)
    return ids


def _links(memories: Memories) -> dict[int, int | None]:
    stored = memories.iter(include_superseded=True, include_expired=True)
    return {m.id: m.superseded_by for m in stored}


def test_forgetting_the_newer_memory_brings_the_old_one_back(memories: Memories) -> None:
    old, new = _chain(memories, 2)
    memories.forget([new])
    back = memories.get(old)
    assert back.superseded_by is None and back.superseded_at is None
    assert all(old in ids for ids in found_by(memories).values())
    assert memories.add(NEWEST, supersedes=old).id > new  # current again: it may be superseded


def test_forgetting_the_middle_of_a_chain_links_past_it(memories: Memories) -> None:
    first, middle, last = _chain(memories)
    at = memories.get(first).superseded_at
    memories.forget([middle])
    assert _links(memories) == {first: last, last: None}
    assert memories.get(first).superseded_at == at
    assert [m.id for m in memories.history(first)] == [first, last]
    assert [m.id for m in memories.list()] == [last]


@pytest.mark.parametrize(
    ("gone", "left"),
    [
        ([0, 1, 2, 3], {}),
        ([1, 2], {0: 3, 3: None}),
        ([2, 3], {0: 1, 1: None}),
        ([1, 3], {0: 2, 2: None}),
        ([0, 2], {1: 3, 3: None}),
        ([1, 2, 3], {0: None}),
        ([0, 3], {1: 2, 2: None}),
    ],
)
def test_forgetting_several_at_once_splices_each_chain(
    memories: Memories, gone: list[int], left: dict[int, int | None]
) -> None:
    chain = _chain(memories, 4)
    other = _chain(memories, 2, user="bob")
    memories.forget([chain[i] for i in gone])
    expected = {chain[i]: None if after is None else chain[after] for i, after in left.items()}
    assert _links(memories) == {**expected, other[0]: other[1], other[1]: None}


def test_forgetting_the_old_memory_leaves_the_newer_as_it_was(memories: Memories) -> None:
    old, new = _chain(memories, 2)
    before = memories.get(new)
    memories.forget([old])
    assert memories.get(new) == before
    assert [m.id for m in memories.history(new)] == [new]


def test_forget_where_includes_superseded_memories(memories: Memories) -> None:
    old, new = _chain(memories, 2, user="alice")
    kept = memories.add(OLD, user="bob").id
    result = memories.forget(where=Filters(user="alice"), dry_run=True)
    assert [m.id for m in result.forgotten] == [old, new]
    memories.forget(where=Filters(user="alice"))
    assert every_id(memories) == {kept}


# --- export and import ---------------------------------------------------------------------------


def _shape(memories: Memories) -> set[tuple[Any, ...]]:
    """Every memory by content, with the content of the memory that superseded it."""
    stored = {m.id: m for m in memories.iter(include_superseded=True, include_expired=True)}
    return {
        (
            m.text,
            m.user,
            m.conversation,
            None if m.superseded_by is None else stored[m.superseded_by].text,
            m.superseded_at,
            m.expires_at,
        )
        for m in stored.values()
    }


def _linked_store(memories: Memories) -> None:
    _chain(memories, 3, user="alice")
    _chain(memories, 2, user="bob", conversation="c9")
    first = memories.add("the deploy window opens at nine").id
    second = memories.add("the deploy window closes at five").id
    memories.add("the deploy window opens after the freeze", supersedes=first)
    memories.add("the deploy window opens after the freeze", supersedes=second)  # one replaces two
    memories.import_([{"text": "a memory that expired long ago", "expires_at": "2001-01-01T00:00:00Z"}])
    memories.add("a memory that expires in a year", expires_at="365d")
    memories.add(OTHER)


@pytest.mark.parametrize("with_vectors", [False, True])
def test_export_then_import_keeps_every_link_and_expiry(
    open_backend: Callable[..., Backend], with_vectors: bool
) -> None:
    source = _memories(open_backend())
    _linked_store(source)
    exported = list(source.export(with_vectors=with_vectors))
    assert len(exported) == len(every_id(source))  # superseded and expired ones too
    fresh = _memories(open_backend("fresh"))
    fresh.import_(exported)
    assert _shape(fresh) == _shape(source)
    assert _links(fresh) == _links(source)  # the ids were free: kept
    busy = _memories(open_backend("busy"))
    held = [busy.add(f"a memory the other store held first, number {i}").id for i in range(5)]
    busy.forget(held[1:3])
    busy.import_(exported)
    assert _shape(busy) - _shape(source) == {
        (f"a memory the other store held first, number {i}", None, None, None, None, None) for i in (0, 3, 4)
    }
    assert _shape(source) <= _shape(busy)
    for store in (fresh, busy):  # the same export again: nothing changes
        before, notes = _shape(store), len(store.notes)
        result = store.import_(exported)
        assert result.added == [] and len(result.duplicates) == len(exported)
        assert _shape(store) == before
        assert not any("not kept" in note for note in store.notes[notes:])


def test_an_import_keeps_links_among_memories_it_did_not_add(open_backend: Callable[..., Backend]) -> None:
    source = _memories(open_backend())
    old, _ = _chain(source, 2)
    exported = list(source.export())
    target = _memories(open_backend("target"))
    target.add(OLD)  # the old memory is there already, current
    target.import_(exported)
    stored = {m.text: m for m in target.iter(include_superseded=True)}
    assert stored[OLD].superseded_by == stored[NEW].id
    assert stored[OLD].superseded_at == source.get(old).superseded_at
    assert [m.text for m in target.list()] == [NEW]


def test_an_import_that_contradicts_a_stored_link_keeps_the_store_s_and_says_so(
    open_backend: Callable[..., Backend],
) -> None:
    source = _memories(open_backend())
    _chain(source, 2)
    exported = list(source.export())
    target = _memories(open_backend("target"))
    old = target.add(OLD).id
    mine = target.add("the deploy window moved to the evening", supersedes=old).id
    target.import_(exported)
    stored = {m.text: m for m in target.iter(include_superseded=True)}
    assert stored[OLD].superseded_by == mine and stored[NEW].superseded_by is None
    assert any("not kept" in note for note in target.notes)


def test_importing_part_of_a_chain_never_brings_a_retired_fact_back(
    open_backend: Callable[..., Backend],
) -> None:
    """v1 ← v2 ← v3 imported into a store that holds v2 and v3, v3 superseded there by v4: v1 is
    linked to the store's v2 (an id older than its own), not left current beside v4."""
    source = _memories(open_backend())
    _chain(source, 3)
    exported = list(source.export())
    target = _memories(open_backend("target"))
    _, _, _, v4 = _chain(target, 4)
    target.forget([target.list(include_superseded=True)[-1].id])  # the store holds v2 → v3 → v4
    target.import_(exported)
    stored = {m.text: m for m in target.iter(include_superseded=True)}
    assert stored[OLD].superseded_by == stored[NEW].id < stored[OLD].id
    assert [m.id for m in target.list()] == [v4]
    for path, found in found_by(target).items():
        assert found == {v4}, path
    assert not any("not kept" in note for note in target.notes)


def test_an_import_keeps_a_link_to_a_memory_current_again_unless_the_store_retired_it(
    open_backend: Callable[..., Backend],
) -> None:
    """A memory current again supersedes a later one: its export names it before the memory it
    retired (a link back in the file). A fresh store keeps the link; a store whose own chain retired
    that memory keeps its chain (the link would close a loop) and says so."""
    source = _memories(open_backend())
    old, new = _chain(source, 2)
    assert source.add(OLD).current_again
    exported = list(source.export())
    assert [(r["id"], r["superseded_by"]) for r in exported] == [(old, None), (new, old)]
    fresh = _memories(open_backend("fresh"))
    fresh.import_(exported)
    assert _links(fresh) == {old: None, new: old}
    retired = _memories(open_backend("retired"))
    mine_old, mine_new = _chain(retired, 2)
    retired.import_(exported)
    assert _links(retired) == {mine_old: mine_new, mine_new: None}
    assert any("1 supersede links of the import were not kept" in note for note in retired.notes)


def test_a_link_to_a_memory_left_out_of_the_export_is_counted_not_kept(
    open_backend: Callable[..., Backend],
) -> None:
    source = _memories(open_backend())
    first = source.add("the deploy window opens at nine", tags=["kept"]).id
    second = source.add("the deploy window closes at five", tags=["kept"]).id
    # tags=(): not the "kept" of the memories it supersedes, so the export leaves it out
    merged = source.add("the deploy window is nine to five", tags=(), supersedes=first).id
    source.add("the deploy window is nine to five", tags=(), supersedes=second)
    exported = list(source.export(tags=["kept"]))
    assert [r["superseded_by"] for r in exported] == [merged, merged]
    target = _memories(open_backend("target"))
    target.import_(exported)
    assert {m.superseded_by for m in target.iter(include_superseded=True)} == {None}
    assert any(
        note.startswith("2 imported memories were superseded by memories not in") for note in target.notes
    )


def test_a_big_import_through_the_staging_area_keeps_links_and_expiry(memories: Memories) -> None:
    """More than ``STAGE_BATCH`` entries go through the store's staging area: links and expiry too."""
    from remem.core.staged import STAGE_BATCH

    count = STAGE_BATCH + 10
    records: list[dict[str, Any]] = [
        {"id": i, "text": f"memory number {i}", "created_at": "2026-01-01T00:00:00Z"}
        for i in range(1, count + 1)
    ]
    records[0].update(superseded_by=count, superseded_at="2026-01-02T00:00:00.000Z")
    records[1].update(superseded_by=count)
    records[5]["expires_at"] = "2001-01-01T00:00:00Z"
    assert len(memories.import_(records).added) == count
    assert (memories.get(1).superseded_by, memories.get(1).superseded_at) == (
        count,
        "2026-01-02T00:00:00.000Z",
    )
    assert memories.get(2).superseded_by == count and memories.get(2).superseded_at is not None
    assert memories.get(6).expires_at == "2001-01-01T00:00:00.000Z"
    assert len(memories.list(limit=count)) == count - 3
    old = memories.add("an old fact").id
    added = memories.add_many(
        [NewMemory(f"bulk memory {i}") for i in range(STAGE_BATCH)]
        + [NewMemory("a new fact", supersedes=old)]
    )
    assert memories.get(old).superseded_by == added.added[-1]


def test_a_store_of_mostly_superseded_memories_still_finds_the_current_ones(memories: Memories) -> None:
    """Thousands of versions of one fact, all but the last superseded, nearer the query than
    anything else: an HNSW index (PostgreSQL's always; the local one built here) must look past them."""
    versions = 3000
    records: list[dict[str, Any]] = [
        {"id": i, "text": f"the deploy window opens at hour {i}", "user": "alice", "tags": ["ops"]}
        | ({"superseded_by": i + 1} if i < versions else {})
        for i in range(1, versions + 1)
    ]
    records += [
        {"text": f"unrelated note {j} about lunch", "user": "alice", "tags": ["ops"]} for j in range(20)
    ]
    memories.import_(records)
    if isinstance(memories.backend, LocalBackend):
        memories.reindex(index="hnsw", force=True)
    for filters in ({}, {"tags": ["ops"]}, {"user": "alice"}):
        for mode in ("vector", "hybrid", "keyword"):
            found = [
                h.memory.id
                for h in memories.search("the deploy window opens at hour", k=5, mode=mode, **filters)
            ]
            assert found[0] == versions and len(found) == (1 if mode == "keyword" else 5), (
                mode,
                filters,
                found,
            )
            assert all(memories.get(mid).superseded_by is None for mid in found)
