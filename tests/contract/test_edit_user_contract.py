"""``Memories.edit(id, user=...)`` moves a memory to another user (issue 53 #2, ``remem edit --user``),
on every back-end: the filters and the keyword index follow at once, the text and vectors stay; a move
that would make two memories of one text for the new user, a conversation's turn and one of a chain
of replaced memories are refused, naming what is in the way, and change nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from remem import Memories
from remem.core.opening import model_catalog
from remem.embedders.catalog import ModelCatalog
from remem.errors import InvalidInputError
from remem.testing import FakeEmbedder
from remem.types import Filters

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from remem.backends.base import Backend

TEXT = "the vault key rotates every ninety days"


@pytest.fixture
def memories(backend: Backend) -> Memories:
    """A store of each back-end holding TEXT as alice's memory 1, tagged security."""
    memories = Memories(backend, model_catalog(environ={}), FakeEmbedder())
    memories.add(TEXT, user="alice", tags=["security"], meta={"team": "sre"})
    return memories


def _ids(memories: Memories, **filters: object) -> list[int]:
    return [m.id for m in memories.list(**filters)]


def _keyword_ids(memories: Memories, query: str, **filters: object) -> list[int]:
    return [hit.memory.id for hit in memories.search(query, mode="keyword", **filters)]


def test_a_memory_moves_to_another_user_and_every_filter_follows(memories: Memories) -> None:
    before = memories.get(1)
    vectors = memories.backend.vectors_of_memories([1])[1]
    assert _keyword_ids(memories, "alice") == [1]  # a user's name is a keyword of their memories
    moved = memories.edit(1, user="bob")
    assert (moved.user, moved.text, moved.tags, moved.meta) == ("bob", TEXT, ("security",), {"team": "sre"})
    assert (moved.created_at, moved.sha256) == (before.created_at, before.sha256) and moved.updated_at
    assert memories.get(1) == moved
    assert _ids(memories, user="bob") == [1] and _ids(memories, user="alice") == []
    assert _keyword_ids(memories, "bob") == [1] and _keyword_ids(memories, "alice") == []
    assert _keyword_ids(memories, "vault", user="alice") == []
    assert [h.memory.id for h in memories.search("vault key", user="bob")] == [1]
    assert memories.backend.vectors_of_memories([1])[1] == vectors  # not embedded again
    shared = memories.edit(1, no_user=True)
    assert shared.user is None and _ids(memories, user="bob") == []
    assert _ids(memories, user="carol", shared=True) == [1]
    assert memories.add(TEXT, user="alice").id != 1  # alice may hold the text again: a new memory


def test_the_same_text_of_the_new_user_is_named_and_nothing_moves(memories: Memories) -> None:
    held = memories.add(TEXT, user="bob").id
    with pytest.raises(InvalidInputError, match=rf"user 'bob' already holds this text as memory {held}"):
        memories.edit(1, user="bob", tags=["moved"])
    assert (memories.get(1).user, memories.get(1).tags) == ("alice", ("security",))
    shared = memories.add(TEXT).id
    with pytest.raises(InvalidInputError, match=rf"without a user hold this text as memory {shared}"):
        memories.edit(1, no_user=True)
    other = memories.add("the vault key rotates every thirty days", user="alice").id
    weekly = memories.add("the vault key rotates every week", user="bob").id
    with pytest.raises(InvalidInputError, match=f"as memory {weekly}"):  # the text it would have
        memories.edit(other, "the vault key rotates every week", user="bob")
    assert (memories.get(other).user, memories.get(other).text) == (
        "alice",
        "the vault key rotates every thirty days",
    )


def test_a_conversation_turn_and_a_chain_stay_with_their_user(memories: Memories) -> None:
    turn = memories.add("I was charged twice", user="alice", conversation="support-42", role="user").id
    with pytest.raises(InvalidInputError, match="turn of conversation 'support-42'"):
        memories.edit(turn, user="bob")
    newer = memories.add("the vault key rotates every thirty days", supersedes=1).id
    for member in (1, newer):
        with pytest.raises(InvalidInputError, match=rf"chain of replaced memories \(1, {newer}\)"):
            memories.edit(member, user="bob")
    assert {memories.get(i).user for i in (turn, 1, newer)} == {"alice"}


def test_the_same_user_again_is_no_move_and_bad_arguments_change_nothing(memories: Memories) -> None:
    assert memories.edit(1, user=" alice ").user == "alice"
    for arguments in ({"user": "bob", "no_user": True}, {"user": " "}, {"user": "a\nb"}):
        with pytest.raises(InvalidInputError):
            memories.edit(1, **arguments)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        memories.edit(1, user=7)  # type: ignore[arg-type]
    assert memories.get(1).user == "alice"


def test_a_long_lived_store_scores_after_a_move_as_a_fresh_one_does(
    open_backend: Callable[..., Backend], tmp_path: Path
) -> None:
    catalog = ModelCatalog(tmp_path / "models")
    store = Memories(open_backend(), catalog, embedder=FakeEmbedder())
    for n, user in enumerate(["alice", "alice", "bob", None] * 3):
        store.add(f"vault key note {n} " + "zebra " * n, user=user)
    scopes = (Filters.of(user="alice"), Filters.of(user="bob", shared=True))

    def scores(memories: Memories) -> dict[tuple[Filters, str], list[tuple[int, float]]]:
        return {
            (scope, mode): [
                (hit.memory.id, round(hit.score, 9))
                for hit in memories.search("vault zebra", k=50, mode=mode, dates=False, scope=scope)  # type: ignore[arg-type]
            ]
            for scope in scopes
            for mode in ("keyword", "hybrid")
        }

    scores(store)  # what the long-lived store counts for each scope, and keeps
    store.edit(1, user="bob")
    store.edit(3, no_user=True)
    fresh = Memories(open_backend(), catalog, embedder=FakeEmbedder())
    assert scores(store) == scores(fresh)
    fresh.close()
