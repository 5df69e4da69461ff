"""``Memories.edit`` changes a memory's tags and meta as well as its text (issue 53 #2), on every
back-end: what is given replaces what was there, the keyword index and the filters follow at once,
the text and its vectors stay, and a bad or empty edit changes nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from remem import Memories
from remem.core.opening import model_catalog
from remem.errors import InvalidInputError, MemoryNotFoundError
from remem.testing import FakeEmbedder

if TYPE_CHECKING:
    from collections.abc import Callable

    from remem.backends.base import Backend

TEXT = "the vault key rotates every ninety days"


def _memories(backend: Backend) -> Memories:
    return Memories(backend, model_catalog(environ={}), FakeEmbedder())


@pytest.fixture
def memories(backend: Backend) -> Memories:
    """A store of each back-end holding TEXT (memory 1) tagged ``security``, meta team=sre."""
    memories = _memories(backend)
    memories.add(TEXT, user="alice", tags=["security"], meta={"team": "sre"})
    memories.add("the office coffee machine is broken again", user="alice", tags=["office"])
    return memories


def _keyword_ids(memories: Memories, query: str, **filters: object) -> list[int]:
    return [hit.memory.id for hit in memories.search(query, mode="keyword", **filters)]


def test_new_tags_replace_the_old_ones_everywhere(memories: Memories) -> None:
    before = memories.get(1)
    vectors = memories.backend.vectors_of_memories([1])[1]
    assert _keyword_ids(memories, "security") == [1]
    edited = memories.edit(1, tags=["rotation", "ops"])
    assert (edited.text, edited.sha256, edited.created_at) == (before.text, before.sha256, before.created_at)
    assert edited.tags == ("ops", "rotation") and edited.meta == {"team": "sre"}
    assert edited.updated_at is not None
    assert memories.get(1) == edited
    assert [m.id for m in memories.list(tags=["rotation"])] == [1]
    assert memories.list(tags=["security"]) == []
    assert _keyword_ids(memories, "rotation") == [1]  # a tag is a keyword of its memory
    assert _keyword_ids(memories, "security") == []
    assert memories.backend.vectors_of_memories([1])[1] == vectors  # not embedded again


def test_new_meta_replaces_the_old(memories: Memories) -> None:
    edited = memories.edit(1, meta={"owner": "bob"})
    assert (edited.meta, edited.tags) == ({"owner": "bob"}, ("security",))
    assert [m.id for m in memories.list(meta={"owner": "bob"})] == [1]
    assert memories.list(meta={"team": "sre"}) == []
    assert memories.edit(1, tags=(), meta={}).tags == () and memories.get(1).meta == {}


def test_text_and_tags_in_one_edit(memories: Memories) -> None:
    edited = memories.edit(1, "the vault key rotates every thirty days", tags=["rotation"])
    assert (edited.text, edited.tags, edited.meta) == (
        "the vault key rotates every thirty days",
        ("rotation",),
        {"team": "sre"},
    )
    assert _keyword_ids(memories, "thirty rotation") == [1]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({}, InvalidInputError),
        ({"tags": ["ok", " "]}, InvalidInputError),
        ({"tags": "ops"}, TypeError),
        ({"meta": {"": "x"}}, InvalidInputError),
        ({"text": "   ", "tags": ["ops"]}, InvalidInputError),
    ],
)
def test_a_bad_edit_changes_nothing(memories: Memories, arguments: dict[str, object], error: type) -> None:
    before = memories.get(1)
    with pytest.raises(error):
        memories.edit(1, **arguments)  # type: ignore[arg-type]
    assert memories.get(1) == before


def test_an_edit_of_no_memory(memories: Memories) -> None:
    with pytest.raises(MemoryNotFoundError):
        memories.edit(99, tags=["ops"])


def test_scores_after_new_tags_equal_a_fresh_stores(open_backend: Callable[..., Backend]) -> None:
    """The keyword statistics a long-lived store keeps follow the new tags: a search scores as on a
    store where the memories were added with them."""
    edited, fresh = _memories(open_backend()), _memories(open_backend("fresh"))
    texts = [f"note {i} about the vault key and rotation" for i in range(6)]
    for i, text in enumerate(texts):
        edited.add(text, tags=["old"])
        fresh.add(text, tags=["vault"] if i % 2 else ["old"])
    assert _keyword_ids(edited, "vault rotation", tags=["old"])  # statistics counted and kept
    for memory_id in range(2, 7, 2):
        edited.edit(memory_id, tags=["vault"])
    for tags in (["vault"], ["old"], None):
        got = edited.search("vault rotation", mode="keyword", tags=tags, k=10)
        want = fresh.search("vault rotation", mode="keyword", tags=tags, k=10)
        assert [(h.memory.id, pytest.approx(h.score, abs=1e-9)) for h in got] == [
            (h.memory.id, h.score) for h in want
        ]
