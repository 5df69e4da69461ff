"""Session mates (``remem.core.sessions``): which pooled memories lift each other, and by how much."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from remem.backends.base import TurnTime
from remem.core.search import sessions
from remem.core.turns import CONTEXT_GAP
from remem.times import utc_iso

START = datetime(2024, 3, 1, 9, tzinfo=timezone.utc)


def at(minutes: float, conversation: str = "chat", user: str | None = None) -> TurnTime:
    """A turn of ``conversation`` made ``minutes`` after 2024-03-01 09:00 UTC."""
    return TurnTime(user, conversation, utc_iso(START + timedelta(minutes=minutes)))


def test_a_turn_gains_the_mean_of_its_two_best_mates() -> None:
    scores = {1: 2.0, 2: 1.0, 3: -0.5, 4: 0.4}
    times = {1: at(0), 2: at(1), 3: at(2), 4: at(3)}
    lifted = sessions.lifts(scores, times)
    weight = sessions.SESSION_WEIGHT
    assert sessions.SESSION_MATES == 2
    assert lifted[1] == pytest.approx(weight * (1.0 + 0.4) / 2)
    assert lifted[2] == pytest.approx(weight * (2.0 + 0.4) / 2)
    assert lifted[3] == pytest.approx(weight * (2.0 + 1.0) / 2)
    assert lifted[4] == pytest.approx(weight * (2.0 + 1.0) / 2)


def test_a_missing_mate_counts_as_the_pools_average() -> None:
    lifted = sessions.lifts({1: 1.0, 2: 3.0}, {1: at(0), 2: at(5)})
    assert lifted == {
        1: pytest.approx(sessions.SESSION_WEIGHT * 3.0 / 2),
        2: pytest.approx(sessions.SESSION_WEIGHT * 1.0 / 2),
    }


def test_mates_are_the_same_conversation_and_user_within_the_gap() -> None:
    gap = CONTEXT_GAP.total_seconds() / 60
    scores = dict.fromkeys(range(1, 8), 1.0)
    times = {
        1: at(0),
        2: at(gap),  # exactly the gap after 1: a mate
        3: at(gap * 2 + 1),  # more than the gap after 2: a session of its own
        4: at(1, conversation="other"),  # another conversation at the same time
        5: at(1, user="bob"),  # another user's turn of the same conversation
        6: at(gap * 2 + 1, user="bob"),
    }  # 7: not in a conversation (no TurnTime)
    lifted = sessions.lifts(scores, times)
    assert set(lifted) == {1, 2}
    assert lifted[1] == lifted[2] == pytest.approx(sessions.SESSION_WEIGHT * 1.0 / 2)


def test_only_pooled_memories_are_mates() -> None:
    assert sessions.lifts({1: 1.0}, {1: at(0), 2: at(1)}) == {}
    assert sessions.lifts({}, {1: at(0), 2: at(1)}) == {}


def test_other_weights_and_mates() -> None:
    scores = {1: 0.0, 2: 3.0, 3: 1.0}
    times = {1: at(0), 2: at(1), 3: at(2)}
    assert sessions.lifts(scores, times, weight=1.0, mates=1)[1] == pytest.approx(3.0)
    assert sessions.lifts(scores, times, weight=0.5, mates=3)[1] == pytest.approx(0.5 * 4.0 / 3)


def brute_force(
    scores: dict[int, float], times: dict[int, TurnTime], weight: float, mates: int
) -> dict[int, float]:
    """``lifts`` by its definition: every pair of pooled turns looked at."""
    gap = CONTEXT_GAP.total_seconds()

    def moment(mid: int) -> float:
        return datetime.fromisoformat(times[mid].created_at.replace("Z", "+00:00")).timestamp()

    lifted = {}
    for mid in (m for m in times if m in scores):
        near = [
            scores[other]
            for other in times
            if other != mid
            and other in scores
            and times[other][:2] == times[mid][:2]
            and abs(moment(other) - moment(mid)) <= gap
        ]
        if near:
            lifted[mid] = weight * sum(sorted(near, reverse=True)[:mates]) / mates
    return lifted


@pytest.mark.parametrize("seed", range(30))
def test_the_sliding_window_gives_what_every_pair_would(seed: int) -> None:
    """Random pools: a few conversations and users, turns spread over hours, tied times and scores."""
    rng = random.Random(seed)
    size = rng.randint(2, 120)
    times = {
        mid: at(
            rng.choice([rng.uniform(0, 400), rng.randint(0, 8) * 30]),
            rng.choice("ab"),
            rng.choice([None, "u"]),
        )
        for mid in range(size)
    }
    scores = {mid: rng.choice([rng.gauss(0, 1), 0.5]) for mid in range(size) if rng.random() < 0.9}
    for weight, mates in ((0.4, 2), (1.0, 1), (0.3, 3)):
        got = sessions.lifts(scores, times, weight, mates)
        assert got.keys() == brute_force(scores, times, weight, mates).keys()
        for mid, value in brute_force(scores, times, weight, mates).items():
            assert got[mid] == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_turns_within_one_window_gain_exactly_what_every_pair_would(seed: int) -> None:
    """A conversation whose pooled turns all lie within the gap of each other (its mates are the
    best of them all): the same sums, to the last bit, as every pair gives."""
    rng = random.Random(seed)
    size = rng.randint(2, 40)
    times = {mid: at(rng.uniform(0, 59), rng.choice("ab")) for mid in range(size)}
    scores = {mid: rng.choice([rng.gauss(0, 1), 0.5]) for mid in range(size)}
    for weight, mates in ((0.4, 2), (1.0, 1), (0.3, 3)):
        assert sessions.lifts(scores, times, weight, mates) == brute_force(scores, times, weight, mates)
