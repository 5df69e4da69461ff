"""Named speakers on every back-end: a hybrid query naming one speaker of a conversation ranks what
that speaker said above the other speaker's turns that merely name them (``remem.core.speakers``)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

import pytest

from helpers import cosine
from remem import Memories
from remem.core.opening import model_catalog
from remem.core.search import speakers
from remem.testing import FakeEmbedder
from remem.times import utc_iso
from remem.types import NewMemory

if TYPE_CHECKING:
    from remem.backends.base import Backend

#: One turn a day (no context, no session mates): Jon's greeting names Gina and shares the query's
#: words; Gina's answer shares fewer of them, and says nothing of herself.
TURNS = [
    ("Jon", "Hey Gina, what did you want in the store?"),
    ("Gina", "My customers should feel cozy"),
    ("Jon", "I bought a new bike"),
    ("Gina", "The weather was cold"),
]
QUERY = "What did Gina want her customers to feel in her store?"
START = datetime(2024, 5, 8, 13, 56, tzinfo=timezone.utc)


def store(
    backend: Backend, roles: dict[str, str] | None = None, conversation: str | None = "chat"
) -> Memories:
    """The turns in a store over ``backend``, their roles renamed by ``roles``."""
    memories = Memories(backend, model_catalog(environ={}), FakeEmbedder())
    memories.add_many(
        [
            NewMemory(
                text,
                conversation=conversation,
                role=(roles or {}).get(role, role),
                created_at=utc_iso(START + timedelta(days=day)),
            )
            for day, (role, text) in enumerate(TURNS)
        ]
    )
    return memories


def order(memories: Memories, query: str = QUERY) -> list[str]:
    """The texts hybrid search returns, best first."""
    return [hit.memory.text for hit in memories.search(query, k=len(TURNS), mode="hybrid")]


def plain_order(memories: Memories, monkeypatch: pytest.MonkeyPatch, query: str = QUERY) -> list[str]:
    """``order`` as if the query named no speaker."""
    with monkeypatch.context() as patch:
        patch.setattr(speakers, "named", lambda text, times: frozenset())
        return order(memories, query)


def test_a_named_speakers_answer_outranks_a_turn_that_names_them(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    memories = store(backend)
    greeting, answer = TURNS[0][1], TURNS[1][1]
    assert plain_order(memories, monkeypatch)[0] == greeting
    named = order(memories)
    assert named[0] == answer
    assert named.index(TURNS[3][1]) < named.index(TURNS[2][1])  # Gina's turns before Jon's
    hit = memories.search(QUERY, k=1, mode="hybrid")[0]  # the cosine shown: of the query without "Gina"
    alone = memories.search("What did want her customers to feel in her store?", k=4, mode="vector")
    assert hit.vector is not None
    assert hit.vector.score == pytest.approx(next(cosine(h) for h in alone if h.memory.text == answer))
    vector = memories.search(QUERY, k=4, mode="vector")  # vector search keeps the name
    assert vector[0].memory.text == greeting


@pytest.mark.parametrize(
    ("roles", "conversation", "query"),
    [
        ({"Gina": "user", "Jon": "assistant"}, "chat", QUERY.replace("Gina", "user")),  # not names
        ({}, "chat", QUERY.replace("Gina", "gina")),  # not as written
        ({}, None, QUERY),  # not turns of a conversation
    ],
)
def test_no_speaker_named_ranks_as_before(
    backend: Backend,
    monkeypatch: pytest.MonkeyPatch,
    roles: dict[str, str],
    conversation: str | None,
    query: str,
) -> None:
    memories = store(backend, roles, conversation)
    assert order(memories, query) == plain_order(memories, monkeypatch, query)


def test_naming_every_speaker_takes_their_names_out_of_the_vector_only(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    memories = store(backend)
    query = "What did Gina and Jon want in the store?"
    result = memories.search(query, k=len(TURNS), mode="hybrid")
    alone = {
        h.memory.id: cosine(h) for h in memories.search("What did and want in the store?", k=4, mode="vector")
    }
    assert all(
        hit.vector is not None and hit.vector.score == pytest.approx(alone[hit.memory.id]) for hit in result
    )
    with monkeypatch.context() as patch:  # no turn gains: the same scores as without any gain
        patch.setattr(speakers, "SPEAKER_WEIGHT", 100.0)
        assert [h.score for h in memories.search(query, k=len(TURNS), mode="hybrid")] == [
            h.score for h in result
        ]
