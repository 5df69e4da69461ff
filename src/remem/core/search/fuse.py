"""Ranking a pool: one pure function (``rank``, no I/O) from a query and its pool to a ranking, each
of whose lifts is named and recorded on the hit it moved (``Lift``).

Hybrid: each memory's fused score is a convex mix of the two lanes' standardised scores:
``VECTOR_WEIGHT`` × z(cosine) + (1 − ``VECTOR_WEIGHT``) × z(BM25), where z is (x − mean) / std over
the pool — the cosines' std at least ``COSINE_SPREAD_FLOOR`` of their mean distance from 1, BM25's
at least ``KEYWORD_SPREAD_FLOOR`` of the query's weight, so that in a small pool, or where few
memories match, a small difference does not stand out as a large one would. A match covering less
than ``FULL_COVERAGE`` of the query's IDF-weighted terms counts in proportion. Unlike rank fusion
this keeps how far apart the scores are. A model blind across scripts does not read memories in
another script than the query's: they get the pool's lowest cosine (lift ``script``).

Then, in this order, the lifts: ``session`` (a turn gains from its best session mates, ``sessions``),
``speaker`` (the turns of a speaker the query names, ``speakers``), ``time`` (a memory from the
window the query's time words name: evidence, never a filter — ``TIME_WEIGHT``), and ``phrase``
(hybrid and keyword modes: a memory holding the whole query as a phrase ranks before the others;
with a window that holds pooled memories, only those from then).
Vector and keyword modes rank by their lane's score; there the time lift is ``TIME_COSINE`` (a
cosine) or ``TIME_KEYWORD`` × the pool's best BM25.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, NamedTuple

from remem.core.search import sessions, speakers
from remem.core.search.pool import FULL_COVERAGE, Candidate, Pool
from remem.types import Lane, Lift, SearchMode

if TYPE_CHECKING:
    from remem.backends.base import Coverage, Scored

#: The vector lane's weight in the fused score (the keyword lane's is 1 − it), chosen with the three
#: constants below. Measured with bench/fusion_lab.py (whose re-fusion reproduces search exactly) on
#: SciFact (hybrid nDCG@10), LoCoMo (evidence recall@10) and the memory-shaped set (hit@1), each
#: split into tuning / held-out halves (seed 31), and on the CJK set (hit@1; bundled model /
#: multilingual-e5-small), reported and never tuned on; against the Reciprocal Rank Fusion used
#: before (k 10, matches below a fifth of the query's IDF weight dropped, a phrase bonus):
#:   RRF:        SciFact 0.6782 / 0.7633 (all 0.7208), LoCoMo 0.7055 / 0.7192 (0.7124),
#:               memory set 1.00 / 0.82 (0.907), CJK set 0.14 / 0.60.
#:   this rule:  SciFact 0.7064 / 0.7769 (0.7417), LoCoMo 0.7128 / 0.7229 (0.7179),
#:               memory set 0.95 / 0.86 (0.907), CJK set 0.14 / 0.60; LoCoMo with the session
#:               lift after it (``sessions``): 0.7232 / 0.7491 (0.7362).
#:   weight 0.45: 0.7370, 0.7149, 0.907, CJK 0.14 / 0.58; 0.55: 0.7412, 0.7082, 0.884, 0.14 / 0.60.
VECTOR_WEIGHT = 0.5
#: BM25's spread over the pool, in the z-score, is at least this share of the query's whole IDF
#: weight: where few memories match, a weak match would otherwise stand out as far as a strong one
#: (a z-score is blind to scale). None: 0.7413, 0.7161, 0.907, CJK 0.07 / 0.44 (a query's character
#: pairs shared by chance); 0.06: 0.7412, 0.7169, CJK 0.14 / 0.58; 0.1: 0.7396, 0.7076.
#: (``FULL_COVERAGE``, in ``pool``: dropping weaker matches, as RRF did: LoCoMo 0.7018; counting
#: every match whole: 0.7413, 0.7153, 0.907, CJK 0.12 / 0.56; 0.1: 0.7414, 0.7143, CJK 0.14 / 0.56;
#: 0.3: 0.7322, 0.7124.)
KEYWORD_SPREAD_FLOOR = 0.08
#: The cosines' spread over the pool, in the z-score, is at least this share of the pool's mean
#: cosine distance (1 − its mean cosine; relative, since models differ in scale: the bundled model's
#: pools sit near 0.3, multilingual-e5-small's near 0.85). In a small pool (a narrow filter, a few
#: memories) cosines 0.16 and 0.23 are the model's noise, not one lane's ±1 standard deviation
#: outvoting a keyword match: the memory set's "the bug from Tuesday" (two memories that day) needs
#: it (none: 0.884). SciFact and LoCoMo pools are wider: no change from 0.05 to 0.08 on any corpus
#: with either model. An absolute 0.04 instead held e5's pools (spread ≈ 0.01) and lost SciFact with
#: e5 0.7357 → 0.7139 and LoCoMo 0.7245 → 0.7045.
COSINE_SPREAD_FLOOR = 0.06
#: What a memory from the window the query's time words name adds to its fused score (z-score
#: units, after the session mates and speakers): about one standard deviation of a lane, so among
#: memories that fit the question alike those from then come first, while one that answers it
#: clearly better (a z-score or more ahead) still wins. Before (a filter), "why do we not deploy on
#: Friday" found only last Friday's lunch order (cosine 0.03) and not the memory that answers it.
TIME_WEIGHT = 1.0
#: The same lift in vector mode, in cosine units: the memory-shaped set's "What was our decision
#: from last Thursday?" needs 0.2 (that Thursday's decision 0.07, an older one 0.26; 0.1: temporal
#: hit@1 0.83); LoCoMo vector R@10 (its questions' dates, "in May 2023", name windows of its
#: sessions) was 0.581 with the window as a filter, 0.577 with 0.2, 0.581 with 0.3 and 0.5; "why do
#: we not deploy on Friday" keeps its answer (0.54) above last Friday's lunch order (0.03 + 0.3).
TIME_COSINE = 0.3
#: The same lift in keyword mode: this share of the pool's best BM25.
TIME_KEYWORD = 0.25


class Ranked(NamedTuple):
    """A memory id with its lanes and the lifts that moved it, before the memory itself is fetched.
    A named tuple: a hybrid search lifts ~140 of them (``dataclasses.replace`` on a frozen
    dataclass took 2.3 ms of a profiled 10k search)."""

    id: int
    score: float
    vector: Lane | None
    keyword: Lane | None
    lifts: tuple[Lift, ...] = ()

    def lifted(self, name: str, size: float | None) -> Ranked:
        """This memory with one more lift (``size`` None: it moved ahead, its score unchanged)."""
        lifts = (*self.lifts, Lift(name, size))
        return Ranked(self.id, self.score + (size or 0.0), self.vector, self.keyword, lifts)


def rank(pool: Pool, mode: SearchMode) -> list[Ranked]:
    """The pool ranked in ``mode``, best first, every lift named on the memory it moved (see the
    module docstring). Pure: the same pool always gives the same ranking."""
    unread = {c.id for c in pool.candidates if c.unread}
    ranked = _lifted(_fused(pool), pool, unread) if mode is SearchMode.HYBRID else _one_lane(pool, mode)
    ranked = _in_window(ranked, pool, mode, unread)
    return _phrase_first(ranked, pool) if mode is not SearchMode.VECTOR else ranked


def _one_lane(pool: Pool, mode: SearchMode) -> list[Ranked]:
    """Vector or keyword mode: the lane's own list, in its order, scored by its raw score."""
    keyword = mode is SearchMode.KEYWORD
    ranked = [
        Ranked(c.id, lane.score, None if keyword else lane, lane if keyword else None)
        for c in pool.candidates
        if (lane := c.keyword if keyword else c.vector) is not None
    ]
    return sorted(ranked, key=lambda r: (r.keyword or r.vector or Lane(0, 0.0)).rank)


def best_first(ranked: list[Ranked], unread: Collection[int] = ()) -> list[Ranked]:
    """By score, ties broken by the better vector score (none for a memory the model cannot read),
    then the smaller id (deterministic)."""
    return sorted(
        ranked,
        key=lambda r: (-r.score, -(r.vector.score if r.vector and r.id not in unread else -2.0), r.id),
    )


def spread(values: Sequence[float], floor: float = 0.0) -> tuple[float, float]:
    """The mean of ``values`` and the spread ``standardised`` divides by: their population std, or
    ``floor`` where that is larger; a spread of 0 counts as 1."""
    mean = sum(values) / len(values)
    std = max((sum([(x - mean) ** 2 for x in values]) / len(values)) ** 0.5, floor)
    return mean, std or 1.0


def standardised(values: Sequence[float], floor: float = 0.0) -> list[float]:
    """The z-scores of ``values``: (x − mean) / their population std, or ``floor`` where that is
    larger; a spread of 0 counts as 1."""
    mean, std = spread(values, floor)
    return [(x - mean) / std for x in values]


def keyword_evidence(bm25: float, share: float) -> float:
    """A match's BM25 as the fusion counts it: whole from FULL_COVERAGE of the query's term weight
    on, in proportion below."""
    return bm25 * min(1.0, share / FULL_COVERAGE)


def fused(pool: Pool) -> list[Ranked]:
    """The z-score fusion of the pool's two lanes, best first (``best_first``; see the module
    docstring). A memory the vector lane did not score, or ``unread`` by the model, gets the lowest
    cosine of the pool's read memories (and no cosine to break ties). Without the query's weight
    (``pool.weight`` None) every match counts whole and BM25's spread has no floor."""
    return best_first(_fused(pool), {c.id for c in pool.candidates if c.unread})


def _fused(pool: Pool) -> list[Ranked]:
    """``fused`` in the pool's order (``_lifted`` sorts it once, after the lifts: ``best_first``'s
    order is total, so sorting before as well changed nothing)."""
    if not pool.candidates:
        return []
    (cosines, cosine_floor), (bm25, keyword_floor) = _lane_values(pool)
    scores = zip(
        pool.candidates, standardised(cosines, cosine_floor), standardised(bm25, keyword_floor), strict=True
    )
    return [_fused_one(c, VECTOR_WEIGHT * z_c + (1 - VECTOR_WEIGHT) * z_k) for c, z_c, z_k in scores]


LaneValues = tuple[tuple[list[float], float], tuple[list[float], float]]
#: The last pool's ``_lane_values``: ``fused`` and then ``lane_spreads`` (the shown scores'
#: calibration) read the same pool; one pass over ~170 candidates instead of two (about 0.2 ms of
#: CPU a hybrid search on the 10k bench store). Held with the pool itself, so ``is`` is a safe test.
_last: tuple[Pool, LaneValues] | None = None


def _lane_values(pool: Pool) -> LaneValues:
    """Each lane's values over the (non-empty) pool as fusion standardises them, with the floor of
    their spread: (cosines, floor), (BM25 evidence, floor). The same pool's again are the same
    lists (never modified by their readers)."""
    global _last  # noqa: PLW0603 - a one-entry memo; the values depend on the pool alone
    last = _last
    if last is not None and last[0] is pool:
        return last[1]
    values = _lane_values_of(pool)
    _last = (pool, values)
    return values


def _lane_values_of(pool: Pool) -> LaneValues:
    """``_lane_values``, computed."""
    pool_ = pool.candidates
    read = [c.vector.score for c in pool_ if c.vector and not c.unread]
    lowest = min(read, default=0.0)
    cosines = [c.vector.score if c.vector and not c.unread else lowest for c in pool_]
    bm25 = [keyword_evidence(c.keyword.score, c.share) if c.keyword else 0.0 for c in pool_]
    floor = 0.0 if pool.weight is None else KEYWORD_SPREAD_FLOOR * pool.weight
    distance = 1.0 - sum(cosines) / len(cosines)
    return (cosines, COSINE_SPREAD_FLOOR * distance), (bm25, floor)


def lane_spreads(pool: Pool) -> tuple[float, float, float, float, float]:
    """What ``fused`` standardised the (non-empty) pool's lanes with: the cosines' mean and spread,
    the BM25 evidence's mean and spread, and the weight of the lanes whose values differ (a lane
    whose values are all alike adds nothing to a fused score; 1 where neither differs)."""
    (cosines, cosine_floor), (bm25, keyword_floor) = _lane_values(pool)
    weight = (VECTOR_WEIGHT if len(set(cosines)) > 1 else 0.0) + (
        1 - VECTOR_WEIGHT if len(set(bm25)) > 1 else 0.0
    )
    return (*spread(cosines, cosine_floor), *spread(bm25, keyword_floor), weight or 1.0)


def _fused_one(candidate: Candidate, score: float) -> Ranked:
    """One candidate's fused score, with the ``script`` lift named where the model cannot read it."""
    lifts = (Lift("script", None),) if candidate.unread else ()
    return Ranked(candidate.id, score, candidate.vector, candidate.keyword, lifts)


def fuse(
    vector_ranked: Sequence[Scored],
    keyword_ranked: Sequence[Scored],
    unread: Collection[int] = (),
    coverage: Coverage | None = None,
) -> list[Ranked]:
    """``fused`` of the pool of two best-first (id, score) lists (``Pool.of_lanes``)."""
    return fused(Pool.of_lanes(vector_ranked, keyword_ranked, unread, coverage))


def _lifted(ranked: list[Ranked], pool: Pool, unread: Collection[int]) -> list[Ranked]:
    """The fused pool (in any order) with what each turn's session mates add to its score
    (``sessions``), then its speaker if the query names them (``speakers``); best first."""
    times = {c.id: c.turn for c in pool.candidates if c.turn is not None}
    if len(times) <= 1:
        return best_first(ranked, unread)
    mates = sessions.lifts({r.id: r.score for r in ranked}, times)
    named = speakers.lifts(times, pool.speakers)
    for name, sizes in (("session", mates), ("speaker", named)):
        if sizes:
            ranked = [r.lifted(name, sizes[r.id]) if r.id in sizes else r for r in ranked]
    return best_first(ranked, unread)


def _in_window(ranked: list[Ranked], pool: Pool, mode: SearchMode, unread: Collection[int]) -> list[Ranked]:
    """The memories from the query's window lifted (``TIME_WEIGHT``, ``TIME_COSINE``, ``TIME_KEYWORD``)
    and the ranking re-sorted; unchanged when no pooled memory is from then."""
    inside = {c.id for c in pool.candidates if c.in_window}
    if not inside:
        return ranked
    if mode is SearchMode.HYBRID:
        size = TIME_WEIGHT
    elif mode is SearchMode.VECTOR:
        size = TIME_COSINE
    else:
        size = TIME_KEYWORD * max(r.score for r in ranked)
    lifted = [r.lifted("time", size) if r.id in inside else r for r in ranked]
    if mode is SearchMode.HYBRID:
        return best_first(lifted, unread)
    return sorted(lifted, key=lambda r: (r.id in unread, -r.score, r.id))


def _phrase_first(ranked: list[Ranked], pool: Pool) -> list[Ranked]:
    """The memories holding the whole query as a phrase first (lift ``phrase``), each part in its
    order; where the query's window holds pooled memories, only those from then: its time words are
    part of what it asks ("the importer bug from yesterday" is not last month's importer bug)."""
    dated = any(c.in_window for c in pool.candidates)
    holding = {c.id for c in pool.candidates if c.phrase and (c.in_window or not dated)}
    if not holding:
        return ranked
    first = [r.lifted("phrase", None) for r in ranked if r.id in holding]
    return first + [r for r in ranked if r.id not in holding]
