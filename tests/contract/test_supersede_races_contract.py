"""Memories that change, raced by real processes on every back-end: one process supersedes a memory
while another forgets it, edits it, supersedes it too, or forgets the next link of its chain — round
after round, each at a random moment. Whatever the order, the outcome is one the rules allow
(``remem.backends.links``) and the store stays consistent: no link to a missing memory, no loop, a
refused add stored nothing, no edit lost."""

from __future__ import annotations

import multiprocessing
import queue
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import remem
from remem.errors import RememError
from remem.testing import FakeEmbedder

pytestmark = pytest.mark.slow  # real processes, kills or races (the slow tier)

if TYPE_CHECKING:
    from remem import Memories, Memory
    from remem.backends.base import Backend

#: Rounds of each race; a round takes a few milliseconds of work in each process.
ROUNDS = 150
#: The most each process waits, at random, after the round's start before it acts (seconds).
JITTER = 0.006

#: Each race: what the first and the second process do to the round's memories at once. Every
#: round has a chain W → M → T (every other round just M → T, or T alone for ``forget``).
RACES = {
    "forget": ("supersede T", "forget T"),
    "edit": ("supersede T", "edit T"),
    "supersede": ("supersede T", "supersede T"),
    "supersede alike": ("resupersede T", "resupersede T"),
    "forget the middle": ("supersede T", "forget M"),
    "forget two links": ("forget M", "forget T"),
    "bring back": ("bring W", "supersede T"),
}


def _location(name: str, place: Path) -> str:
    """The store the contract's opener made at ``place``, as another process opens it."""
    if name == "postgres":
        import postgres_server

        return postgres_server.store_url(postgres_server.start(place), str(place))
    return str(place / "store")


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", what the call returned) or (the error's class name, its message)."""
    try:
        return "ok", call()
    except RememError as exc:
        return type(exc).__name__, str(exc)


def _act(memories: Memories, action: str, part: str, number: int, chain: dict[str, int]) -> tuple[str, Any]:
    """Do ``action`` to the round's chain; its outcome."""
    verb, which = action.split()
    target = chain[which]
    if verb == "supersede":
        return _outcome(lambda: memories.add(f"{part}'s correction {number}", supersedes=target).id)
    if verb == "resupersede":  # the same correction from both processes
        return _outcome(lambda: memories.add(f"the correction {number}", supersedes=target).id)
    if verb == "forget":
        return _outcome(lambda: [m.id for m in memories.forget([target]).forgotten])
    if verb == "bring":  # the first fact again: current again, superseding whatever is current now
        return _outcome(lambda: memories.add(f"round {number} memory, version 0").id)
    return _outcome(lambda: memories.edit(target, f"{part}'s edit in round {number}").text)


def _racer(
    location: str, part: str, action: str, chains: list[dict[str, int]], start: Any, results: Any
) -> None:
    """Do ``action`` in every round, after the round's barrier and a random wait; put the
    outcomes on ``results``."""
    rng = random.Random(f"{part}{action}")
    found: list[tuple[str, Any]] = []
    with remem.open(location, create=False, embedder=FakeEmbedder(), environ={}) as memories:
        memories.stats()  # connected before the first round
        for number, chain in enumerate(chains):
            start.wait(60)
            time.sleep(rng.uniform(0, JITTER))
            found.append(_act(memories, action, part, number, chain))
    results.put((part, found))


def _setup(memories: Memories, race: str) -> list[dict[str, int]]:
    """Each round's chain: W → M → T, every other round M → T (T alone every other round of
    ``forget``, which needs no M), by their ids."""
    chains = []
    for number in range(ROUNDS):
        versions = 3 if number % 2 or race in ("forget the middle", "forget two links", "bring back") else 2
        if race == "forget" and number % 4 == 0:
            versions = 1
        ids: list[int] = []
        for version in range(versions):
            text = f"round {number} memory, version {version}"
            ids.append(memories.add(text, supersedes=ids[-1] if ids else None).id)
        chains.append(dict(zip(["W", "M", "T"][-len(ids) :], ids, strict=True)))
    return chains


def _race(location: str, race: str, chains: list[dict[str, int]]) -> dict[str, list[tuple[str, Any]]]:
    """Run the two processes of ``race``; each one's outcomes, by part (``first``, ``second``)."""
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(2), context.Queue()
    processes = [
        context.Process(target=_racer, args=(location, part, action, chains, start, results), daemon=True)
        for part, action in zip(("first", "second"), RACES[race], strict=True)
    ]
    for process in processes:
        process.start()
    found: dict[str, list[tuple[str, Any]]] = {}
    try:
        while len(found) < 2:
            try:
                part, outcomes = results.get(timeout=1)
                found[part] = outcomes
            except queue.Empty:
                assert all(p.is_alive() or p.exitcode == 0 for p in processes), "a racer failed"
    finally:  # done, or one failed: the other would wait at the barrier
        for process in processes:
            process.join(10 if len(found) == 2 else 0.1)
            if process.is_alive():
                process.kill()
    return found


def assert_consistent(stored: dict[int, Memory]) -> None:
    """Every link of the store as the rules leave it: to a memory that exists, of the same user
    and conversation, with its time; no loop (every chain ends in a current memory)."""
    for memory in stored.values():
        if memory.superseded_by is None:
            assert memory.superseded_at is None, memory
            continue
        newer = stored.get(memory.superseded_by)
        assert newer is not None, f"memory {memory.id} is superseded by missing memory {memory.superseded_by}"
        assert memory.superseded_at is not None, memory
        assert (newer.user, newer.conversation) == (memory.user, memory.conversation)
        seen, after = {memory.id}, memory.superseded_by
        while after is not None:
            assert after not in seen, f"a loop through memory {after}"
            seen.add(after)
            after = stored[after].superseded_by


@pytest.mark.parametrize("race", list(RACES))
def test_racing_links_ends_as_the_rules_allow(
    open_backend: Callable[..., Backend], request: pytest.FixtureRequest, tmp_path: Path, race: str
) -> None:
    setup = remem.Memories(open_backend(), remem.model_catalog(environ={}), FakeEmbedder())
    chains = _setup(setup, race)
    location = _location(request.node.callspec.params["open_backend"], tmp_path)
    started = time.monotonic()
    outcomes = _race(location, race, chains)
    took = time.monotonic() - started

    after = remem.Memories(open_backend(), remem.model_catalog(environ={}), FakeEmbedder())
    stored = {m.id: m for m in after.iter(include_superseded=True, include_expired=True)}
    assert_consistent(stored)
    by_text = {m.text: m.id for m in stored.values()}
    orders: set[str] = set()
    for number, (chain, first, second) in enumerate(
        zip(chains, outcomes["first"], outcomes["second"], strict=True)
    ):
        outcome = {"first": first, "second": second}
        seen = _Round(number, chain, stored, by_text, race)
        for part, action in zip(("first", "second"), RACES[race], strict=True):
            seen.check(part, action, outcome[part])
        orders.add(seen.check_together(race, first, second))
    if race in ("forget", "supersede", "bring back"):  # both orders happened (else they did not race)
        assert len(orders) == 2, (orders, took)
    checks, _ = after.backend.doctor(repair=False)
    assert all(check.ok for check in checks), [c for c in checks if not c.ok]


class _Round:
    """What one round left in the store, checked against what each process was told."""

    def __init__(
        self,
        number: int,
        chain: dict[str, int],
        stored: dict[int, Memory],
        by_text: dict[str, int],
        race: str,
    ) -> None:
        self.number, self.chain, self.stored, self.by_text = number, chain, stored, by_text
        #: What a correction that was done may be superseded by afterwards: W, brought back.
        self.later = {None, chain["W"]} if race == "bring back" else {None}

    def check(self, part: str, action: str, outcome: tuple[str, Any]) -> None:
        """One process's action as it said it went: done and kept, or refused and nothing stored."""
        verb, which = action.split()
        target = self.chain[which]
        if verb == "resupersede":
            assert outcome == ("ok", self.by_text[f"the correction {self.number}"]), outcome
            assert self.stored[target].superseded_by == outcome[1]
        elif verb == "supersede":
            mine = self.by_text.get(f"{part}'s correction {self.number}")
            if outcome[0] == "ok":
                assert mine == outcome[1] and self.stored[mine].superseded_by in self.later
                assert target not in self.stored or self.stored[target].superseded_by == mine
            else:
                assert mine is None, (self.number, outcome)  # a refused add stored nothing
                assert outcome[0] in ("MemoryNotFoundError", "InvalidInputError"), outcome
        elif verb == "forget":
            assert outcome == ("ok", [target]) and target not in self.stored
        elif verb == "bring":
            assert outcome == ("ok", target) and self.stored[target].superseded_by is None, outcome
        else:
            assert outcome == ("ok", f"{part}'s edit in round {self.number}"), outcome
            assert self.stored[target].text == outcome[1]  # no edit lost

    def check_together(self, race: str, first: tuple[str, Any], second: tuple[str, Any]) -> str:
        """The round's outcome as the rules allow for both at once; which order it took (``both``
        where the order does not show)."""
        chain, stored = self.chain, self.stored
        if race == "forget":  # the supersede came first (it stands, its predecessor links to it) or not
            return self._forget_order(first)
        if race == "bring back":  # W current again, superseding T or the correction that came first
            if second[0] == "ok":
                assert (stored[chain["T"]].superseded_by, stored[second[1]].superseded_by) == (
                    second[1],
                    first[1],
                )
                return "corrected, then brought back"
            assert f"already superseded by memory {chain['W']}" in second[1], second
            assert stored[chain["T"]].superseded_by == chain["W"]
            return "brought back first"
        if race == "supersede":
            assert sorted([first[0], second[0]]) == ["InvalidInputError", "ok"], (first, second)
            winner, loser = (first, second) if first[0] == "ok" else (second, first)
            assert stored[chain["T"]].superseded_by == winner[1]
            assert f"already superseded by memory {winner[1]}" in loser[1], loser
            return "first won" if winner is first else "second won"
        if race == "edit":
            assert first[0] == "ok" and stored[chain["T"]].superseded_by == first[1]
        elif race == "supersede alike":  # stored once, one id for both
            assert first == second, (first, second)
        elif race == "forget the middle":
            assert first[0] == "ok" and stored[chain["W"]].superseded_by == chain["T"]
            assert stored[chain["T"]].superseded_by == first[1]
        else:
            assert stored[chain["W"]].superseded_by is None, (
                self.number,
                stored[chain["W"]],
            )  # current again
        return "both"

    def _forget_order(self, first: tuple[str, Any]) -> str:
        before = [self.stored[self.chain[name]] for name in ("M",) if name in self.chain]
        if first[0] == "ok":
            assert all(memory.superseded_by == first[1] for memory in before)
            return "superseded, then forgotten"
        assert first[0] == "MemoryNotFoundError", first
        assert all(memory.superseded_by is None for memory in before)  # current again
        return "forgotten first"
