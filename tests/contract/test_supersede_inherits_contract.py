"""A memory that supersedes another takes the old one's user, conversation, tags and meta unless it
gives them (issue 53 #2), on every back-end: what a fact was filed under survives its update."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from remem import Memories
from remem.core.opening import model_catalog
from remem.errors import InvalidInputError
from remem.testing import FakeEmbedder

if TYPE_CHECKING:
    from remem.backends.base import Backend

OLD = "the deploy window opens at nine for the payments service"
NEW = "the deploy window opens at ten for the payments service"


@pytest.fixture
def memories(backend: Backend) -> Memories:
    """A Memories over a new, empty store of each back-end, holding OLD (memory 1), filed."""
    memories = Memories(backend, model_catalog(environ={}), FakeEmbedder())
    memories.add(
        OLD, user="alice", conversation="ops", role="user", tags=["deploy", "payments"], meta={"team": "sre"}
    )
    return memories


def test_what_is_not_given_comes_from_the_memory_it_supersedes(memories: Memories) -> None:
    added = memories.add(NEW, supersedes=1)
    new = memories.get(added.id)
    assert (new.user, new.conversation, new.tags, new.meta) == (
        "alice",
        "ops",
        ("deploy", "payments"),
        {"team": "sre"},
    )
    assert new.role is None  # who said it is the new memory's own
    assert memories.get(1).superseded_by == added.id
    found = memories.search("payments", mode="keyword", user="alice", tags=["deploy"])
    assert [hit.memory.id for hit in found] == [added.id]  # filed under the tags, indexed with them


def test_what_is_given_wins(memories: Memories) -> None:
    added = memories.add(
        NEW, user="alice", conversation="ops", tags=["window"], meta={"owner": "bob"}, supersedes=1
    )
    new = memories.get(added.id)
    assert (new.tags, new.meta) == (("window",), {"owner": "bob"})
    no_tags = memories.add("the deploy window opens at noon", tags=(), meta={}, supersedes=added.id)
    assert (memories.get(no_tags.id).tags, memories.get(no_tags.id).meta) == ((), {})


def test_another_user_is_still_refused(memories: Memories) -> None:
    with pytest.raises(InvalidInputError, match="same user and conversation"):
        memories.add(NEW, user="bob", supersedes=1)
    assert [m.id for m in memories.iter(include_superseded=True)] == [1]


def test_the_same_text_again_links_the_memory_stored_already(memories: Memories) -> None:
    first = memories.add(NEW, user="alice", conversation="ops")
    again = memories.add(NEW, supersedes=1)  # inherits alice/ops: the same text of the same scope
    assert (again.id, again.duplicate) == (first.id, True)
    assert memories.get(1).superseded_by == first.id
