"""Who wrote each memory (``Memory.written_by``), on every back-end: a call names its writer, else
the ``Memories``' own ``writer`` is recorded (None: unknown); the first writer of a text stays when it
is added again or edited; it travels with an export into an import (unknown stays unknown), through
the staging area too, and a record that does not say (an older export) is written by ``import``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from remem import Filters, Memories, NewMemory
from remem.core import staged
from remem.core.opening import model_catalog
from remem.errors import InvalidInputError
from remem.testing import FakeEmbedder
from remem.types import memory_record

if TYPE_CHECKING:
    from collections.abc import Callable

    from remem.backends.base import Backend


def _memories(backend: Backend) -> Memories:
    return Memories(backend, model_catalog(environ={}), FakeEmbedder())


@pytest.fixture
def memories(backend: Backend) -> Memories:
    """A Memories over a new, empty store of each back-end."""
    return _memories(backend)


def _writers(memories: Memories) -> dict[str, str | None]:
    return {memory.text: memory.written_by for memory in memories.iter()}


def test_each_memory_records_who_wrote_it(memories: Memories) -> None:
    nobody = memories.add("written by a program that names nobody").id
    assert memories.get(nobody).written_by is None
    memories.writer = "cli"
    memories.add("the deploy window opens at nine")
    memories.add("alice prefers short answers", user="alice", written_by="alice")
    memories.add_many(["one of a batch", NewMemory("named in its entry", written_by="bob")])
    assert _writers(memories) == {
        "written by a program that names nobody": None,
        "the deploy window opens at nine": "cli",
        "alice prefers short answers": "alice",
        "one of a batch": "cli",
        "named in its entry": "bob",
    }
    [listed] = memories.list(user="alice")
    assert listed.written_by == "alice" and memory_record(listed)["written_by"] == "alice"
    hit = memories.search("deploy window", mode="keyword").hits[0]
    assert hit.memory.written_by == "cli"


def test_the_first_writer_stays_when_the_text_is_added_again_or_edited(memories: Memories) -> None:
    first = memories.add("the office coffee machine is broken", written_by="alice").id
    assert memories.add("the office coffee machine is broken", written_by="bob").duplicate
    memories.edit(first, "the office coffee machine is broken again", tags=["office"])
    assert memories.get(first).written_by == "alice"
    newer = memories.add("the coffee machine is fixed", supersedes=first, written_by="bob").id
    assert [m.written_by for m in memories.history(newer)] == ["alice", "bob"]


def test_a_writer_that_is_no_name_changes_nothing(memories: Memories) -> None:
    with pytest.raises(InvalidInputError, match="written_by"):
        memories.add("a memory", written_by="   ")
    with pytest.raises(TypeError, match="written_by"):
        memories.add("a memory", written_by=7)  # type: ignore[arg-type]
    assert list(memories.iter()) == []


@pytest.mark.parametrize("batch", [None, 3], ids=["one-transaction", "staged"])
def test_who_wrote_a_memory_travels_with_its_export(
    open_backend: Callable[..., Backend], monkeypatch: pytest.MonkeyPatch, batch: int | None
) -> None:
    if batch is not None:
        monkeypatch.setattr(staged, "STAGE_BATCH", batch)
    source = _memories(open_backend("source"))
    source.add("alice wrote this", written_by="alice")
    source.add("nobody is known to have written this")
    source.add("the cli wrote this", written_by="cli")
    source.add("another of alice's", written_by="alice")
    records = [memory_record(memory) for memory in source.iter()]
    records.append({"text": "an older export's record, without the field"})
    target = _memories(open_backend("target"))
    assert len(target.import_(records).added) == 5
    assert _writers(target) == {
        "alice wrote this": "alice",
        "nobody is known to have written this": None,
        "the cli wrote this": "cli",
        "another of alice's": "alice",
        "an older export's record, without the field": "import",
    }


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_search_by_writer_and_user_keeps_only_that_writers_memories(memories: Memories, mode: str) -> None:
    for writer in ("alice", "bob"):
        for n in range(3):
            memories.add(f"the deploy checklist item {n} noted by {writer}", user="team", written_by=writer)
    memories.add("the deploy checklist of another team", user="other", written_by="bob")
    found = memories.search("deploy checklist", k=10, mode=mode, where=Filters(user="team", written_by="bob"))
    assert sorted(hit.memory.text for hit in found.hits) == [
        f"the deploy checklist item {n} noted by bob" for n in range(3)
    ]
