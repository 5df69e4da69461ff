"""Speakers named in a query (``remem.core.speakers``): which roles count as named, the query
without them, and what their turns gain."""

from __future__ import annotations

from remem.backends.base import TurnTime
from remem.core import speakers


def pool(*roles: str | None) -> dict[int, TurnTime]:
    """Pooled turns of one conversation, one per role, ids from 1."""
    return {
        mid: TurnTime(None, "chat", "2024-05-08T13:56:00.000Z", role) for mid, role in enumerate(roles, 1)
    }


def test_a_query_naming_one_of_two_speakers_names_them() -> None:
    turns = pool("Gina", "Jon", "Gina")
    assert speakers.named("What did Gina want her customers to feel?", turns) == {"Gina"}
    assert speakers.named("What do Gina's customers feel?", turns) == {"Gina"}
    assert speakers.named("What did Jon say?", turns) == {"Jon"}


def test_naming_every_speaker_or_none_names_nobody() -> None:
    turns = pool("Gina", "Jon")
    assert speakers.named("What did Gina tell Jon?", turns) == frozenset()
    assert speakers.named("What did she want?", turns) == frozenset()
    assert speakers.named("What did Gina want?", pool("Gina", "Gina")) == frozenset()  # one speaker


def test_only_names_count_as_written_and_as_whole_words() -> None:
    turns = pool("Gina", "Jon", "user", "assistant", None, "  ")
    assert speakers.named("what did the user ask the assistant", turns) == frozenset()  # not names
    assert speakers.named("what did gina want", turns) == frozenset()  # not as written
    assert speakers.named("Ginas and Jonathan and Gina2", turns) == frozenset()  # other words
    assert speakers.named("Dr Smith said so", pool("Dr Smith", "Jon")) == {"Dr Smith"}


def test_the_query_without_the_names_keeps_every_other_word() -> None:
    assert speakers.without("What did Gina want her customers to feel?", {"Gina"}) == (
        "What did want her customers to feel?"
    )
    assert speakers.without("Did Gina’s store open, Gina?", {"Gina"}) == "Did store open?"
    assert speakers.without("Dr Smith and Smith", {"Dr Smith", "Smith"}) == "and"
    assert speakers.without("Gina's", {"Gina"}) == ""
    assert speakers.without("Gina?", {"Gina"}) == ""


def test_a_named_speakers_turns_gain_the_weight_and_no_one_else() -> None:
    turns = pool("Gina", "Jon", None)
    assert speakers.lifts(turns, {"Gina"}) == {1: speakers.SPEAKER_WEIGHT}
    assert speakers.lifts(turns, set()) == {}
