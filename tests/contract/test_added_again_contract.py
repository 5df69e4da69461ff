"""The same text added again, on every back-end: while its memory is current it is a duplicate
(nothing changes); while it is retired — superseded, or expired — that memory is current again:
it supersedes what had replaced it (history kept), takes the add's expiry, and every read finds it
(``remem.core.superseding.add_again``, ``remem.backends.links.revival``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from remem import Memories
from remem.backends.links import Link
from remem.core.opening import model_catalog
from remem.errors import InvalidInputError
from remem.testing import FakeEmbedder

if TYPE_CHECKING:
    from remem.backends.base import Backend

PORT = "The primary database listens on port {}"
PAST = "2001-02-03T04:05:06.000Z"


@pytest.fixture
def memories(backend: Backend) -> Memories:
    """A Memories over a new, empty store of each back-end."""
    return Memories(backend, model_catalog(environ={}), FakeEmbedder())


def found_by(memories: Memories, query: str = "primary database listens on port") -> dict[str, set[int]]:
    """The ids each read path finds: every search mode, list, iter and context."""
    found = {
        f"search {mode}": {h.memory.id for h in memories.search(query, k=20, mode=mode)}
        for mode in ("vector", "keyword", "hybrid")
    }
    found["list"] = {m.id for m in memories.list()}
    found["iter"] = {m.id for m in memories.iter()}
    found["context"] = {item.memory.id for item in memories.context(query, similar=10)}
    return found


def links_of(memories: Memories) -> dict[int, int | None]:
    """Every memory's ``superseded_by``."""
    return {m.id: m.superseded_by for m in memories.iter(include_superseded=True, include_expired=True)}


def chain(memories: Memories, *ports: int, **fields: Any) -> list[int]:
    """Memories of these ports, each superseding the one before."""
    ids = [memories.add(PORT.format(ports[0]), **fields).id]
    for port in ports[1:]:
        ids.append(memories.add(PORT.format(port), supersedes=ids[-1], **fields).id)
    return ids


def test_a_fact_that_changed_back_is_current_again(memories: Memories) -> None:
    first, second = chain(memories, 5432, 5433)
    again = memories.add(PORT.format(5432))
    assert (again.id, again.duplicate, again.current_again, again.superseded) == (
        first,
        True,
        True,
        (second,),
    )
    assert links_of(memories) == {first: None, second: first}
    for path, found in found_by(memories).items():
        assert found == {first}, path
    assert [m.id for m in memories.history(first)] == [first, second]
    assert [m.id for m in memories.history(second)] == [first, second]


def test_a_fact_added_again_supersedes_the_head_of_its_chain(memories: Memories) -> None:
    first, second, third = chain(memories, 5432, 5433, 5434)
    again = memories.add(PORT.format(5432))
    assert again.current_again and again.superseded == (third,)
    assert links_of(memories) == {first: None, second: third, third: first}
    assert {m.id for m in memories.history(first)} == {first, second, third}
    for path, found in found_by(memories).items():
        assert found == {first}, path
    newest = memories.add(PORT.format(5435), supersedes=first)  # current again: it may be superseded
    assert links_of(memories)[first] == newest.id


def test_the_old_text_with_supersedes_brings_it_back(memories: Memories) -> None:
    first, second = chain(memories, 5432, 5433)
    again = memories.add(PORT.format(5432), supersedes=second)
    assert again.id == first and again.current_again and again.superseded == (second,)
    assert links_of(memories) == {first: None, second: first}


def test_the_old_text_superseding_a_retired_memory_is_refused_and_changes_nothing(memories: Memories) -> None:
    first, second, third = chain(memories, 5432, 5433, 5434)
    before = links_of(memories)
    with pytest.raises(InvalidInputError, match=f"already superseded by memory {third}"):
        memories.add(PORT.format(5432), supersedes=second)
    assert links_of(memories) == before
    assert memories.get(first).superseded_by == second


def test_a_current_duplicate_stays_a_duplicate(memories: Memories) -> None:
    first, second = chain(memories, 5432, 5433)
    again = memories.add(PORT.format(5433), expires_at="7d")
    assert (again.id, again.duplicate, again.current_again, again.superseded) == (second, True, False, ())
    assert links_of(memories) == {first: second, second: None}
    assert memories.get(second).expires_at is None


def test_a_current_duplicate_may_supersede_a_later_memory(memories: Memories) -> None:
    """No link goes back in time by rule any more (a memory current again supersedes later ones):
    only loops are refused."""
    first = memories.add(PORT.format(5432)).id
    other = memories.add("the replica listens on port 6432").id
    linked = memories.add(PORT.format(5432), supersedes=other)
    assert linked.id == first and linked.duplicate and not linked.current_again
    assert linked.superseded == (other,)
    assert links_of(memories) == {first: None, other: first}


def _expired(memories: Memories, text: str, **fields: Any) -> int:
    (added,) = memories.import_([{"text": text, "expires_at": PAST, **fields}]).added
    return added


@pytest.mark.parametrize("expires", ["7d", None])
def test_an_expired_memory_added_again_is_current_with_the_new_expiry(
    memories: Memories, expires: str | None
) -> None:
    old = _expired(memories, PORT.format(5432))
    assert memories.search(PORT.format(5432), mode="keyword").hits == []
    again = memories.add(PORT.format(5432), expires_at=expires)
    assert (again.id, again.current_again, again.superseded) == (old, True, ())
    stored = memories.get(old).expires_at
    if expires is None:
        assert stored is None
    else:
        assert stored is not None
        left = datetime.fromisoformat(stored.replace("Z", "+00:00")) - datetime.now(timezone.utc)
        assert timedelta(days=6, hours=23) < left <= timedelta(days=7)
    for path, found in found_by(memories).items():
        assert found == {old}, path
    assert memories.forget_expired().forgotten == ()
    assert memories.get(old).id == old


def test_an_expired_and_superseded_memory_added_again_is_current(memories: Memories) -> None:
    old = _expired(memories, PORT.format(5432), user="alice")
    new = memories.add(PORT.format(5433), user="alice", supersedes=old).id
    again = memories.add(PORT.format(5432), user="alice")
    assert again.current_again and again.superseded == (new,)
    assert memories.get(old).expires_at is None
    assert [m.id for m in memories.list(user="alice")] == [old]


def test_a_link_that_would_close_a_loop_is_refused(memories: Memories, backend: Backend) -> None:
    """The rule that replaced "only an older one": a memory never supersedes one its chain leads to."""
    first, _, third = chain(memories, 5432, 5433, 5434)
    before = links_of(memories)
    with pytest.raises(InvalidInputError, match="loop"):
        backend.supersede([Link(third, first, None, None, PAST)])
    assert links_of(memories) == before


def test_a_batch_leaves_a_retired_memory_retired_and_says_so(memories: Memories) -> None:
    """add_many is all or nothing and reports duplicates; one of a retired memory is named in a note."""
    first, second = chain(memories, 5432, 5433)
    result = memories.add_many([PORT.format(5432), PORT.format(5433), "the replica listens on port 6432"])
    assert result.duplicates == [first, second] and len(result.added) == 1
    assert links_of(memories)[first] == second
    assert memories.notes[-1] == (
        "1 duplicate is a memory superseded or expired, left so by a batch: `remem add TEXT` makes one "
        "current again"
    )
