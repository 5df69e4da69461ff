"""Speakers named in a query (``remem.core.speakers``): the names a query may hold, the query
without them, and what their turns gain."""

from __future__ import annotations

from remem.backends.base import TurnTime
from remem.core.search import speakers


def pool(*roles: str | None) -> dict[int, TurnTime]:
    """Pooled turns of one conversation, one per role, ids from 1."""
    at = "2024-05-08T13:56:00.000Z"
    return {mid: TurnTime(None, "chat", at, role) for mid, role in enumerate(roles, 1)}


def test_the_names_a_query_may_hold_are_its_capitalised_words_and_runs_of_them() -> None:
    assert speakers.candidates("What did Gina want her customers to feel?") == ["What", "Gina"]
    assert speakers.candidates("What do Melanie's kids like?") == ["What", "Melanie"]
    assert speakers.candidates("ask Mary Ann Lee Smith, Émile and 王伟") == [
        "Mary",
        "Mary Ann",
        "Mary Ann Lee",
        "Ann",
        "Ann Lee",
        "Ann Lee Smith",
        "Lee",
        "Lee Smith",
        "Smith",
        "Émile",
    ]
    assert speakers.candidates("Gina's Jon, O'Brien and Jean-Luc") == ["Gina", "Jon", "O'Brien", "Jean-Luc"]
    assert speakers.candidates("no names here, user or assistant 42") == []
    assert speakers.candidates("Word " * 500) == ["Word", "Word Word", "Word Word Word"]  # each once
    assert len(speakers.candidates(" ".join(f"Name{i}" for i in range(500)))) == speakers.MAX_CANDIDATES


def named(query: str, turns: dict[int, TurnTime]) -> frozenset[str]:
    return speakers.named(speakers.candidates(query), turns)


def test_the_speakers_a_query_names_are_roles_of_the_turns_as_written() -> None:
    turns = pool("Gina", "Jon", "user", "Mary Ann", None)
    assert named("What did Gina want?", turns) == {"Gina"}
    assert named("Did Gina's friend Mary Ann call Jon?", turns) == {"Gina", "Mary Ann", "Jon"}
    assert named("what did gina and the user want?", turns) == frozenset()  # not as written
    assert named("What did User want?", turns) == frozenset()
    assert named("What did Gina want?", pool(None, "Jon")) == frozenset()
    assert named("What did Gina want?", {}) == frozenset()


def test_the_query_without_the_names_keeps_every_other_word() -> None:
    assert speakers.without("What did Gina want her customers to feel?", {"Gina"}) == (
        "What did want her customers to feel?"
    )
    assert speakers.without("Did Gina’s store open, Gina?", {"Gina"}) == "Did store open?"
    assert speakers.without("Dr Smith and Smith", {"Dr Smith", "Smith"}) == "and"
    assert speakers.without("Ginas and Gina2 stay", {"Gina"}) == "Ginas and Gina2 stay"  # whole words
    assert speakers.without("Gina's", {"Gina"}) == ""
    assert speakers.without("Gina?", {"Gina"}) == ""


def test_a_named_speakers_turns_gain_the_weight_unless_every_speaker_is_named() -> None:
    turns = pool("Gina", "Jon", None, "Gina")
    assert speakers.lifts(turns, {"Gina"}) == {1: speakers.SPEAKER_WEIGHT, 4: speakers.SPEAKER_WEIGHT}
    assert speakers.lifts(turns, {"Gina", "Jon"}) == {}
    assert speakers.lifts(pool("Gina", None), {"Gina"}) == {}  # the only speaker
    assert speakers.lifts(turns, set()) == {}
