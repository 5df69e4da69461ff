"""Conversation turns embedded in context (``remem.core.turns``), through ``remem.open`` on both
back-ends: what each turn's vector was made from, kept true through out-of-order adds, batches,
edits, forgets, pending embeds and re-embeds."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

import remem
from remem import Memories, NewMemory
from remem.core import turns
from remem.testing import FAKE_DIM, FakeEmbedder, fake_vector
from remem.types import ModelInfo

START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
#: (role, text, minutes after START): a chat, then a turn after a two-hour pause.
CHAT = [
    ("Ann", "do you still drive that old van", 0),
    ("Evan", "not anymore", 1),
    ("Ann", "so what happened", 2),
    ("Evan", "I just got back from a trip with my family in my new Prius", 3),
    ("Ann", "morning again", 125),
]
OTHER = ModelInfo(name="fake-other", dim=FAKE_DIM, pooling="mean", sha256="e" * 64)


def turn(n: int, conversation: str = "c1", user: str | None = None) -> NewMemory:
    """The n-th turn of CHAT as a memory."""
    role, text, minutes = CHAT[n]
    at = START + timedelta(minutes=minutes)
    return NewMemory(text, role=role, conversation=conversation, user=user, created_at=at.isoformat())


def line(n: int) -> str:
    return f"{CHAT[n][0]}: {CHAT[n][1]}"


#: What each turn of CHAT is embedded as: its line, then the two before it within the hour.
DOCUMENTS = [
    line(0),
    f"{line(1)}\n{line(0)}",
    f"{line(2)}\n{line(0)}\n{line(1)}",
    f"{line(3)}\n{line(1)}\n{line(2)}",
    line(4),
]


@pytest.fixture(params=["local", "postgres"])
def memories(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memories]:
    """A new store on each back-end, embedding with the fake model."""
    location = request.getfixturevalue("postgres_url") if request.param == "postgres" else tmp_path / "s"
    with remem.open(location, embedder=FakeEmbedder()) as opened:
        yield opened


def vectors(memories: Memories, conversation: str | None) -> dict[str, np.ndarray]:
    """Each memory's (windows, dim) vectors, by its text (of one conversation when given)."""
    found = {}
    for record in memories.export(with_vectors=True, conversation=conversation):
        data = base64.b64decode(record["vector"]["float32_base64"])
        found[record["text"]] = np.frombuffer(data, dtype="<f4").reshape(-1, FAKE_DIM)
    return found


def assert_embedded_as(
    memories: Memories, documents: dict[str, str], conversation: str | None = None
) -> None:
    """Each memory (by text; of ``conversation`` when given) holds exactly the vector of its
    expected document."""
    stored = vectors(memories, conversation)
    for text, document in documents.items():
        np.testing.assert_allclose(
            stored[text], fake_vector(document).reshape(1, -1), atol=1e-6, err_msg=text
        )


def expected(numbers: list[int] | None = None) -> dict[str, str]:
    return {CHAT[n][1]: DOCUMENTS[n] for n in numbers or range(len(CHAT))}


def test_a_turn_is_embedded_with_its_speaker_and_the_two_turns_before_it(memories: Memories) -> None:
    for n in range(len(CHAT)):
        add_turn(memories, turn(n))
    memories.add("a note outside any conversation", role="Ann")
    assert_embedded_as(
        memories, expected() | {"a note outside any conversation": "a note outside any conversation"}
    )
    assert [m.text for m in memories.list(limit=10)][-1] == CHAT[0][1]  # stored texts unchanged


def test_context_lets_the_vector_lane_find_a_turn_that_names_neither_speaker_nor_subject(
    memories: Memories,
) -> None:
    memories.add_many([turn(n) for n in range(len(CHAT))])
    hits = memories.search("what does evan drive", mode="vector", k=1, dates=False)
    assert hits[0].memory.text == CHAT[3][1]


@pytest.mark.parametrize("order", [[3, 0, 1, 2, 4], [4, 2, 0, 3, 1], [1, 3, 0, 4, 2]])
def test_out_of_order_adds_and_batches_embed_every_turn_as_in_order(
    memories: Memories, order: list[int]
) -> None:
    memories.add_many([turn(n) for n in order[:2]])
    for n in order[2:]:
        add_turn(memories, turn(n))
    memories.add_many([turn(n, conversation="c2") for n in reversed(range(len(CHAT)))])
    assert_embedded_as(memories, expected(), conversation="c1")
    assert_embedded_as(memories, expected(), conversation="c2")


def test_threads_are_separate_per_conversation_and_user(memories: Memories) -> None:
    memories.add_many([turn(0, user="u1"), turn(1, user="u2"), turn(2, conversation="c9", user="u1")])
    add_turn(memories, turn(3))  # no user: not a turn of u1's or u2's thread
    assert_embedded_as(memories, {CHAT[n][1]: line(n) for n in range(4)})


def test_an_edit_re_embeds_the_turns_after_it(memories: Memories) -> None:
    ids = [add_turn(memories, turn(n)) for n in range(len(CHAT))]
    memories.edit(ids[1], "sold it last spring")
    edited = f"{CHAT[1][0]}: sold it last spring"
    assert_embedded_as(
        memories,
        {
            "sold it last spring": f"{edited}\n{line(0)}",
            CHAT[2][1]: f"{line(2)}\n{line(0)}\n{edited}",
            CHAT[3][1]: f"{line(3)}\n{edited}\n{line(2)}",
            CHAT[4][1]: line(4),
        },
    )


def test_forgetting_a_turn_re_embeds_the_turns_after_it(memories: Memories) -> None:
    ids = [add_turn(memories, turn(n)) for n in range(len(CHAT))]
    memories.forget([ids[2]])
    assert_embedded_as(
        memories,
        {CHAT[3][1]: f"{line(3)}\n{line(0)}\n{line(1)}", CHAT[1][1]: DOCUMENTS[1], CHAT[4][1]: line(4)},
    )
    memories.forget(where=remem.Filters.of(conversation="c1"))
    assert memories.list() == []


def test_pending_turns_are_embedded_in_context(memories: Memories) -> None:
    for n in range(len(CHAT)):
        add_turn(memories, turn(n), embed=False)
    assert memories.embed_pending() == len(CHAT)
    assert_embedded_as(memories, expected())


def test_a_reembed_embeds_every_turn_in_context(memories: Memories) -> None:
    memories.add_many([turn(n) for n in range(len(CHAT))])
    memories.add("outside")
    backend = memories.backend
    report = backend.reembed(OTHER, turns.whole_store(backend, FakeEmbedder(OTHER)), None, False)
    assert report.swapped
    assert_embedded_as(memories, expected() | {"outside": "outside"})


def test_followers_are_only_the_turns_whose_documents_hold_a_changed_one(memories: Memories) -> None:
    ids = [add_turn(memories, turn(n)) for n in range(len(CHAT))]
    stored = memories.get_many(ids)
    assert sorted(turns.followers(memories.backend, [stored[ids[0]]])) == [ids[1], ids[2]]
    assert sorted(turns.followers(memories.backend, [stored[ids[3]]])) == [ids[4]]  # re-embedded, unchanged
    assert turns.followers(memories.backend, [stored[i] for i in ids]) == []


def add_turn(memories: Memories, memory: NewMemory, *, embed: bool = True) -> int:
    """Add one turn with ``Memories.add`` (not a batch); its id."""
    return memories.add(
        memory.text,
        role=memory.role,
        conversation=memory.conversation,
        user=memory.user,
        created_at=memory.created_at,
        embed=embed,
    ).id


def _keyword(memories: Memories, query: str) -> list[str]:
    return [hit.memory.text for hit in memories.search(query, mode="keyword", k=10, dates=False)]


def test_the_keyword_lane_matches_a_turn_by_its_context_below_its_own_words(memories: Memories) -> None:
    ids = [add_turn(memories, turn(n)) for n in range(len(CHAT))]
    # "van" is in turn 0 only; turns 1 and 2 hold it in their context, turn 3 does not (two back)
    assert _keyword(memories, "van") == [CHAT[0][1], CHAT[1][1], CHAT[2][1]]
    assert _keyword(memories, "Evan van")[:1] == [CHAT[1][1]]  # own name + context beats either alone
    memories.edit(ids[0], "do you still ride that old bike")
    assert _keyword(memories, "van") == []
    assert _keyword(memories, "bike") == ["do you still ride that old bike", CHAT[1][1], CHAT[2][1]]
    memories.forget([ids[0]])
    assert _keyword(memories, "bike") == []


def test_a_context_added_out_of_order_and_one_lost_are_restored(memories: Memories) -> None:
    later = [add_turn(memories, turn(n)) for n in (1, 2)]
    assert _keyword(memories, "van") == []
    add_turn(memories, turn(0), embed=False)  # earlier than both, added last, without its vector
    assert _keyword(memories, "van") == [CHAT[0][1], CHAT[1][1], CHAT[2][1]]
    stored = memories.get_many(later)
    memories.backend.set_contexts([(mid, stored[mid].text, "") for mid in later])  # as a crash would
    assert _keyword(memories, "van") == [CHAT[0][1]]
    memories.reindex()
    assert _keyword(memories, "van") == [CHAT[0][1], CHAT[1][1], CHAT[2][1]]
    assert_embedded_as(memories, expected([0, 1, 2]))


def test_set_contexts_writes_only_changed_contexts_of_unchanged_texts(memories: Memories) -> None:
    ids = [add_turn(memories, turn(n)) for n in range(2)]
    text = memories.get(ids[1]).text
    backend = memories.backend
    assert backend.set_contexts([(ids[1], text, line(0))]) == []  # it has that context already
    assert backend.set_contexts([(ids[1], "not its text any more", "x")]) == []  # edited since read
    assert backend.set_contexts([(ids[1], text, "x"), (10**6, "gone", "x")]) == [ids[1]]
