"""Session mates: the turns of a conversation made close together lift each other in hybrid search.

What a conversation says about one thing it says over several turns of one sitting ("How's the
store going?" / "Hard work's paying off!" / "We sold out twice this week"), and a question about it
matches some of them far better than others. So after fusion, each pooled memory of a conversation
gains ``SESSION_WEIGHT`` × the mean fused score of its ``SESSION_MATES`` best *session mates*: the
other pooled memories of the same conversation and user made within ``turns.CONTEXT_GAP`` of it
(a missing mate counts as 0, the pool's average). Memories outside a conversation have no mates and
gain nothing, so a store without conversations ranks exactly as before.
"""

from __future__ import annotations

import functools
import heapq
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING

from remem.core.turns import CONTEXT_GAP
from remem.times import from_utc_iso

if TYPE_CHECKING:
    from remem.backends.base import TurnTime

#: How much a memory's session mates add to its fused score (× their mean), and how many count.
#: Measured with bench/fusion_lab.py (its re-fusion reproduces search exactly) on LoCoMo (evidence
#: recall@10; tuning / held-out conversations, seed 31), where a question's evidence clusters in
#: sessions; SciFact and the memory-shaped set have no conversations and do not change (0.7417,
#: 0.907). LoCoMo, bundled model (multilingual-e5-small beside it, never tuned on):
#:   no lift (before):      0.7128 / 0.7229 (all 0.7179); e5 0.7245.
#:   weight 0.4, 2 mates:   0.7232 / 0.7491 (0.7362);     e5 0.7557.
#:   0.2: 0.7272, e5 0.7435; 0.3: 0.7335, 0.7505; 0.5: 0.7219 / 0.7426 (0.7323), 0.7550;
#:   1 mate: 0.7192 / 0.7425 (0.7309), 0.7506; 3 mates: 0.7188 / 0.7463 (0.7326), 0.7570.
#:   A missing mate counted as the pool's lowest score instead of 0: within 0.001 of these.
#:   The opposite, diversity (at most 2-6 turns of a session in the top 10): 0.620-0.716.
SESSION_WEIGHT = 0.4
SESSION_MATES = 2


def lifts(
    scores: Mapping[int, float],
    times: Mapping[int, TurnTime],
    weight: float = SESSION_WEIGHT,
    mates: int = SESSION_MATES,
) -> dict[int, float]:
    """For each memory of ``times`` (those of the pool in a conversation) that has session mates
    among ``scores`` (the pool's fused scores), what its mates add to its score: ``weight`` × the
    mean of its best ``mates`` mates' scores, a missing one counting as 0 (see the module
    docstring); memories without mates are absent."""
    sessions: dict[tuple[str | None, str], list[tuple[float, int]]] = defaultdict(list)
    for mid, turn in times.items():
        if mid in scores:
            sessions[(turn.user, turn.conversation)].append((_seconds(turn.created_at), mid))
    lifted: dict[int, float] = {}
    for turns in sessions.values():
        if len(turns) > 1:
            turns.sort()
            lifted.update(_best_mates(turns, scores, weight, mates))
    return lifted


@functools.lru_cache(maxsize=8192)
def _seconds(created_at: str) -> float:
    """A turn's ``created_at`` (``utc_iso``) as POSIX seconds. Cached: a turn's moment never
    changes, and the same turns come back search after search (parsing ~170 a hybrid search took
    0.3 ms of CPU on the 10k bench store; the cache holds a few pools' worth)."""
    return from_utc_iso(created_at).timestamp()


def _best_mates(
    turns: list[tuple[float, int]], scores: Mapping[int, float], weight: float, mates: int
) -> dict[int, float]:
    """``lifts`` of one conversation's pooled turns, sorted by time: a window of ±CONTEXT_GAP slides
    over them with a heap of the scores in it (an entry that fell behind the window is dropped for
    good), so each turn costs a few heap operations, not a pass over its window."""
    gap = CONTEXT_GAP.total_seconds()
    if turns[-1][0] <= turns[0][0] + gap:  # one window holds them all (the comparisons below, at its ends)
        return _all_mates(turns, scores, weight, mates)
    heap: list[tuple[float, int]] = []  # (-score, place in turns)
    lifted: dict[int, float] = {}
    ahead, behind = 0, 0
    for place, (moment, mid) in enumerate(turns):
        while ahead < len(turns) and turns[ahead][0] <= moment + gap:
            heapq.heappush(heap, (-scores[turns[ahead][1]], ahead))
            ahead += 1
        while turns[behind][0] < moment - gap:
            behind += 1
        taken: list[tuple[float, int]] = []
        best: list[float] = []
        while heap and len(best) < mates:
            entry = heapq.heappop(heap)
            if entry[1] < behind:
                continue
            taken.append(entry)
            if entry[1] != place:
                best.append(-entry[0])
        for entry in taken:
            heapq.heappush(heap, entry)
        if best:
            lifted[mid] = weight * sum(best) / mates
    return lifted


def _all_mates(
    turns: list[tuple[float, int]], scores: Mapping[int, float], weight: float, mates: int
) -> dict[int, float]:
    """``_best_mates`` of turns that all lie within one window of each other: each turn's mates are
    the best ``mates`` + 1 of them but itself, taken in the heap's order (score, then place), so each
    sum adds the same values in the same order."""
    best = heapq.nsmallest(mates + 1, [(-scores[mid], place) for place, (_, mid) in enumerate(turns)])
    ahead = {entry[1] for entry in best[:mates]}  # a turn outside them has them as its mates
    common = weight * sum([-entry[0] for entry in best[:mates]]) / mates
    lifted: dict[int, float] = {}
    for place, (_, mid) in enumerate(turns):
        if place in ahead:
            chosen = [-entry[0] for entry in best if entry[1] != place][:mates]
            lifted[mid] = weight * sum(chosen) / mates
        else:
            lifted[mid] = common
    return lifted
