"""A long-lived Memories whose store another process re-embedded with another model (``remem
reindex --model``; issue 46, finding 9a): every write that embeds — add_many (held in memory and
staged), import_, add without embedding (the turns after it), embed_pending, edit, forget (the
turns after it), warm_up — notices that the store's model changed, chooses it again and carries on,
and what it wrote is found by a vector search with the new model. A model the caller gave is never
swapped: its write is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from remem import Memories
from remem.backends.base import Backend
from remem.core import staged
from remem.embedders.catalog import ModelCatalog, ModelChoice
from remem.errors import ModelMismatchError
from remem.testing import FAKE_MODEL, FakeEmbedder
from remem.types import ModelInfo

#: The model the other process re-embeds the store with.
OTHER = ModelInfo(name="fake-other-model", dim=48, pooling="mean", sha256="e" * 64)


class _FakeModels(ModelCatalog):
    """The installed models, as fake embedders: the store's recorded model, or one by name."""

    def __init__(self) -> None:
        super().__init__(Path("no-models-here"))

    def for_store(self, recorded: ModelInfo | None, location: str) -> ModelChoice:
        return ModelChoice(FakeEmbedder(recorded or FAKE_MODEL))  # type: ignore[arg-type]

    def load(self, name: str, *, verify: bool) -> FakeEmbedder:  # type: ignore[override]
        return FakeEmbedder(OTHER if name == OTHER.name else FAKE_MODEL)


def _add_many(memories: Memories) -> str:
    memories.add_many(["the boiler is serviced every march", "the lift inspection is in june"])
    return "the boiler is serviced every march"


def _add_many_staged(memories: Memories) -> str:
    memories.add_many([f"the printer on floor {n} needs toner" for n in range(staged.STAGE_BATCH + 3)])
    return "the printer on floor 7 needs toner"


def _import(memories: Memories) -> str:
    memories.import_([{"text": "the car park closes at midnight"}])
    return "the car park closes at midnight"


def _add_before_a_turn(memories: Memories) -> str:
    memories.add("the standby listens on port 5433", conversation="ops", role="user",
                 created_at="2025-03-01T08:00:00Z", embed=False)  # fmt: skip
    return "the replica listens on port 6432"  # a stored turn after it: its vectors refreshed


def _embed_pending(memories: Memories) -> str:
    memories.add("the badge office opens at eight", embed=False)
    assert memories.embed_pending() == 1
    return "the badge office opens at eight"


def _edit(memories: Memories) -> str:
    memories.edit(_id(memories, "the gym opens at six"), "the gym opens at seven")
    return "the gym opens at seven"


def _forget_a_turn(memories: Memories) -> str:
    memories.forget([_id(memories, "the standby is retired")])
    return "the replica listens on port 6432"  # the turn after it: refreshed


def _id(memories: Memories, text: str) -> int:
    (found,) = [memory.id for memory in memories.iter() if memory.text == text]
    return found


WRITES: dict[str, Callable[[Memories], str]] = {
    "add_many": _add_many,
    "add_many staged": _add_many_staged,
    "import_": _import,
    "add without embedding": _add_before_a_turn,
    "embed_pending": _embed_pending,
    "edit": _edit,
    "forget": _forget_a_turn,
}


def _reindexed_meanwhile(open_backend: Callable[..., Backend]) -> Memories:
    """A Memories that embedded with the first model, after which another (the other process)
    re-embedded the store with ``OTHER``."""
    first = Memories(open_backend(), _FakeModels())
    for text, minute in [("the replica listens on port 6432", 10), ("the standby is retired", 5)]:
        first.add(text, conversation="ops", role="user", created_at=f"2025-03-01T09:{minute:02d}:00Z")
    first.add("the gym opens at six")
    assert first.model == FAKE_MODEL
    with Memories(open_backend(), _FakeModels()) as other:
        other.reindex(model=OTHER.name)
    return first


def _found(memories: Memories, text: str) -> bool:
    hits = memories.search(text, mode="vector", k=3)
    return text in [hit.memory.text for hit in hits]


@pytest.mark.parametrize("write", WRITES)
def test_a_write_after_another_process_changed_the_stores_model_carries_on(
    open_backend: Callable[..., Backend], write: str
) -> None:
    with _reindexed_meanwhile(open_backend) as memories:
        text = WRITES[write](memories)
        assert memories.model == OTHER and memories.embedder().info == OTHER
        assert _found(memories, text)
        assert not [note for note in memories.notes if "left undone" in note], memories.notes


def test_warm_up_after_another_process_changed_the_stores_model_takes_the_new_one(
    open_backend: Callable[..., Backend],
) -> None:
    with _reindexed_meanwhile(open_backend) as memories:
        memories.warm_up()
        assert memories.embedder().info == OTHER


def test_a_model_the_caller_gave_is_never_swapped(open_backend: Callable[..., Backend]) -> None:
    with Memories(open_backend(), _FakeModels(), FakeEmbedder()) as given:
        given.add("the replica listens on port 6432")
        with Memories(open_backend(), _FakeModels()) as other:
            other.reindex(model=OTHER.name)
        with pytest.raises(ModelMismatchError):
            given.add_many(["the boiler is serviced every march"])
        assert given.embedder().info == FAKE_MODEL
