"""Session mates on every back-end: ``Backend.turn_times`` names the memories of conversations, and
hybrid search lifts a turn whose session mates match the query (``remem.core.sessions``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

import pytest

from remem import Memories
from remem.backends.base import TurnTime
from remem.core.opening import model_catalog
from remem.core.search import sessions
from remem.testing import FAKE_MODEL, FakeEmbedder, fake_vector
from remem.times import utc_iso
from remem.types import NewMemory

if TYPE_CHECKING:
    from remem.backends.base import Backend

DAY_ONE = datetime(2024, 5, 8, 13, 56, tzinfo=timezone.utc)


def when(days: float, minutes: float = 0) -> str:
    """A created_at ``days`` and ``minutes`` after the first session."""
    return utc_iso(DAY_ONE + timedelta(days=days, minutes=minutes))


def test_turn_times_name_the_memories_of_conversations(backend: Backend) -> None:
    memories = [
        NewMemory("we met at the cafe", conversation="chat", role="gina", created_at=when(0)),
        NewMemory("the cafe was full", conversation="chat", user="bob", created_at=when(0, 2)),
        NewMemory("a note outside any conversation", user="bob", created_at=when(1)),
    ]
    windows = [fake_vector(m.text).reshape(1, -1) for m in memories]
    ids = [result.id for result in backend.add_many(memories, windows, FAKE_MODEL)]
    missing = max(ids) + 100
    assert backend.turn_times([*ids, missing]) == {
        ids[0]: TurnTime(None, "chat", when(0), "gina"),
        ids[1]: TurnTime("bob", "chat", when(0, 2), None),
    }
    assert backend.turn_times([]) == {}
    assert backend.turn_times([ids[2]]) == {}


#: A conversation: the store turn (day one) and the turn after it that answers "how is it going",
#: a turn days later that answers it as well in words, and turns about other things.
TURNS = [
    (0, 0, "Gina opened her clothing store downtown last week"),
    (0, 1, "Hard work is finally paying off, sales doubled"),
    (0, 2, "Let's grab coffee on Friday to celebrate"),
    (5, 0, "Painting the fence took all weekend"),
    (5, 1, "The work is paying off"),
    (9, 0, "My cat knocked the plant over again"),
    (9, 1, "Did you see the match last night"),
]
QUERY = "Is the work on Gina's clothing store paying off?"


def hybrid_order(memories: Memories) -> list[str]:
    """The texts hybrid search returns for QUERY, best first."""
    return [hit.memory.text for hit in memories.search(QUERY, k=len(TURNS), mode="hybrid")]


@pytest.mark.parametrize("conversation", ["chat", None])
def test_a_turn_is_lifted_by_its_session_mates(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, conversation: str | None
) -> None:
    """Without the lift the later turn's shorter "work is paying off" ranks above the store's own
    answer; with it, the answer rises with its session's turns about the store. Outside a
    conversation nothing is lifted."""
    memories = Memories(backend, model_catalog(environ={}), FakeEmbedder())
    memories.add_many(
        [
            NewMemory(text, conversation=conversation, role="gina", created_at=when(d, m))
            for d, m, text in TURNS
        ]
    )
    answer, later = TURNS[1][2], TURNS[4][2]
    lifted = hybrid_order(memories)
    with monkeypatch.context() as patch:
        patch.setattr(sessions, "lifts", lambda scores, times: {})
        plain = hybrid_order(memories)
    assert plain.index(later) < plain.index(answer)
    if conversation is None:
        assert lifted == plain
    else:
        assert lifted.index(answer) < lifted.index(later)
