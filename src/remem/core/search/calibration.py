"""The shown score: what fusion computed, mapped to a relevance in [0, 1] on one scale in every mode
and on both back-ends, without changing the ranking (``relevances``; pure, no I/O).

The ranking score (``fuse.rank``: hybrid's z-score mix plus its lifts, vector mode's cosine, keyword
mode's BM25) says how a memory compares with the rest of its pool, not how well it answers: a single
hit's z-score is 0, the same memory's changes with the pool's size. So each search first puts its
ranking score back into the lanes' own units with terms that are constant within the search, then a
fitted logistic map turns those into a relevance:

- ``cosine``: hybrid's fused score f in the vector lane's units, mean + spread · f / w over the pool's
  cosines (w: the weight of the lanes that spread; a single hit or a two-hit pool gets its own
  cosines back); vector mode: the cosine itself (plus its time lift).
- ``keyword``: f in the keyword lane's units, (mean + spread · f / w) of the pool's BM25 evidence, per
  unit of the query's IDF weight (a share of what a perfect match scores); keyword mode: the BM25
  per unit of that weight.

relevance = σ(a · cosine + b · keyword − d · ln(rank) + c), with a, b, d ≥ 0 (``Map``, one per mode;
rank: the place in the search's ranking, 1 first; memories tied on the ranking score share the
mean of their places, ``places``). Within a search both terms are affine in the
ranking score with a positive slope and the rank only grows down the list, so the map is monotone:
the order never changes. (The rank term says what the held-out tables show: of two hits alike by
their scores, the one ranked first is more often the answer; without it the pooled table's top bins
fell short of their scores, see the evidence below.) Where a rule puts a memory ahead regardless of
its score (``phrase``; a time lift in a one-lane mode puts one the model cannot read last), a hit
shows at least the relevance of those it outranks (``non_increasing``): the shown score never rises
down the list.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from remem.core.search import fuse
from remem.types import Calibration, SearchMode

if TYPE_CHECKING:
    from remem.core.search.fuse import Ranked
    from remem.core.search.pool import Pool


@dataclass(frozen=True)
class Map:
    """One mode's fitted map: relevance = σ(``cosine`` · the cosine term + ``keyword`` · the keyword
    term − ``rank`` · ln(the hit's rank) + ``bias``); the weights ≥ 0."""

    cosine: float
    keyword: float
    rank: float
    bias: float

    def relevance(self, cosine: float, keyword: float, rank: float) -> float:
        """σ(a · cosine + b · keyword − d · ln(rank) + c), in [0, 1]."""
        return _sigmoid(
            self.cosine * cosine + self.keyword * keyword - self.rank * math.log(rank) + self.bias
        )


#: The bundled model's maps, fitted by ``python bench/calibrate.py --stores DIR --save FILE`` (then
#: ``--load FILE`` once ties shared their mean place; logistic regression on the top 10 hits of every
#: query of the tuning halves of SciFact, LoCoMo and the memory-shaped set, seed 31, 2808 queries ×
#: modes; every hit alike). On the held-out halves (2829 queries × modes, every mode; hits / share
#: relevant per bin of the shown score):
#:   score      SciFact       LoCoMo         memory set   pooled
#:   0.0–0.2    3868 / 0.03   19829 / 0.05   100 / 0.09   23797 / 0.05
#:   0.2–0.4     349 / 0.36    1982 / 0.25    36 / 0.64    2367 / 0.27
#:   0.4–0.6     185 / 0.57     952 / 0.49    25 / 0.96    1162 / 0.51
#:   0.6–0.8      94 / 0.83     141 / 0.56     2 / 1.00     237 / 0.67
#:   0.8–1.0       4 / 1.00       0 / —        0 / —          4 / 1.00
#: Without the rank term (cosine and keyword terms only) the pooled table read 0.07 / 0.24 / 0.39 /
#: 0.59 / 1.00 and the memory set's fell from 0.82 to 0.62 between its second and third bins.
BUNDLED = {
    SearchMode.HYBRID: Map(cosine=1.271, keyword=1.061, rank=1.519, bias=-1.741),
    SearchMode.VECTOR: Map(cosine=2.624, keyword=0.0, rank=1.187, bias=-2.584),
    SearchMode.KEYWORD: Map(cosine=0.0, keyword=1.966, rank=1.364, bias=-1.660),
}
#: multilingual-e5-small's maps, fitted by ``python bench/calibrate.py --model multilingual-e5-small
#: --stores DIR --save FILE`` (the same queries, halves and regression as ``BUNDLED``; 2808 tuning,
#: 2829 held-out queries × modes; its cosines sit near 0.85, so its cosine weights are its own; keyword
#: mode ranks by BM25 alone and came out as ``BUNDLED``'s). On the held-out halves (every mode; hits /
#: share relevant per bin of the shown score):
#:   score      SciFact       LoCoMo         memory set   pooled
#:   0.0–0.2    3873 / 0.03   19882 / 0.05    92 / 0.04   23847 / 0.05
#:   0.2–0.4     362 / 0.36    1990 / 0.28    45 / 0.60    2397 / 0.30
#:   0.4–0.6     172 / 0.53     843 / 0.49    21 / 0.95    1036 / 0.50
#:   0.6–0.8      89 / 0.85     185 / 0.57     5 / 1.00     279 / 0.67
#:   0.8–1.0       4 / 1.00       4 / 0.75     0 / —          8 / 0.88
#: With ``BUNDLED``'s maps (what its store showed before, same run) the pooled table read 0.04 / 0.19 /
#: 0.44 / 0.58 / 1.00: its scores ran high. Its vector map leans on the rank (its cosines say little
#: across queries): vector mode's scores stay low (0.33 for a cosine of 1 ranked first; no held-out
#: hit reached 0.4).
E5_SMALL = {
    SearchMode.HYBRID: Map(cosine=9.243, keyword=0.976, rank=1.479, bias=-9.002),
    SearchMode.VECTOR: Map(cosine=0.492, keyword=0.0, rank=1.406, bias=-1.179),
    SearchMode.KEYWORD: BUNDLED[SearchMode.KEYWORD],  # fitted alike; a keyword search reads no model
}
#: Maps by model name. The BGE models need a download, so their maps could not be fitted: a store of
#: a model without its own maps uses the bundled model's (see docs/search.md).
MAPS: dict[str, dict[SearchMode, Map]] = {"all-minilm-l6-v2": BUNDLED, "multilingual-e5-small": E5_SMALL}


def maps_for(model: str | None) -> dict[SearchMode, Map]:
    """The maps of ``model`` (by name), or the bundled model's."""
    return MAPS.get(model or "", BUNDLED)


@dataclass(frozen=True)
class Basis:
    """What one search's ranking scores are put back into the lanes' units with: each lane's mean and
    spread over the pool (as fusion standardised them), the fused score's lane weight, and the
    query's IDF weight (None: unknown, the keyword term is 0)."""

    cosine_mean: float = 0.0
    cosine_spread: float = 1.0
    keyword_mean: float = 0.0
    keyword_spread: float = 1.0
    weight: float = 1.0
    query_weight: float | None = None

    def terms(self, score: float, mode: SearchMode) -> tuple[float, float]:
        """A ranking score's (cosine, keyword) terms in ``mode`` (see the module docstring)."""
        (cosine, per_cosine), (keyword, per_keyword) = self.lines(mode)
        return cosine + per_cosine * score, keyword + per_keyword * score

    def lines(self, mode: SearchMode) -> tuple[tuple[float, float], tuple[float, float]]:
        """The cosine and keyword terms as lines in the ranking score: (at 0, slope) each."""
        per_weight = 0.0 if not self.query_weight else 1.0 / self.query_weight
        if mode is SearchMode.VECTOR:
            return (0.0, 1.0), (0.0, 0.0)
        if mode is SearchMode.KEYWORD:
            return (0.0, 0.0), (0.0, per_weight)
        cosine = (self.cosine_mean, self.cosine_spread / self.weight)
        return cosine, (self.keyword_mean * per_weight, self.keyword_spread / self.weight * per_weight)


def non_increasing(values: Sequence[float]) -> list[float]:
    """Each value raised to the largest after it: a list that never rises."""
    result = list(values)
    for i in range(len(result) - 2, -1, -1):
        result[i] = max(result[i], result[i + 1])
    return result


#: Ranking scores this close (relative) are one score: PostgreSQL's float sums make equal BM25s
#: differ by about 1e-16, and their order is then arbitrary.
TIE = 1e-9


def places(scores: Sequence[float], first: int | None = None) -> list[float]:
    """Each score's rank for the map's rank term, 1 first: its position in ``scores``, or for a run
    of neighbours that are one score (within ``TIE``) the mean of the run's positions, so memories
    scoring alike show one relevance whatever order their tie came in. With ``first``, only up to
    the end of the run holding the ``first``-th score (the ranks of the ``first`` are the same)."""
    found: list[float] = []
    start = 0
    for n in range(1, len(scores) + 1):
        if n == len(scores) or abs(scores[n] - scores[n - 1]) > TIE * max(1.0, abs(scores[n])):
            found += [(start + n + 1) / 2] * (n - start)
            start = n
            if first is not None and n >= first:
                break
    return found


def relevances(
    ranked: Sequence[Ranked],
    basis: Basis,
    mode: SearchMode,
    model: str | None,
    ranks: Sequence[float] | None = None,
) -> list[float]:
    """Each ranked memory's relevance in [0, 1], in the ranking's order, never rising down the list
    (``non_increasing``); tied memories alike (their ``places``: ``ranks`` if given). One line per
    search: σ(slope · score + offset − d · ln(rank))."""
    chosen = maps_for(model)[mode]
    (cosine, per_cosine), (keyword, per_keyword) = basis.lines(mode)
    slope = chosen.cosine * per_cosine + chosen.keyword * per_keyword
    offset = chosen.cosine * cosine + chosen.keyword * keyword + chosen.bias
    ranks = places([r.score for r in ranked]) if ranks is None else ranks
    raw = [
        _sigmoid(slope * r.score + offset - chosen.rank * math.log(n))
        for n, r in zip(ranks, ranked, strict=True)
    ]
    return non_increasing(raw)


def calibration(ranked: Ranked, rank: float, relevance: float, basis: Basis, mode: SearchMode) -> Calibration:
    """How one ranked memory's shown ``relevance`` was computed (``--explain``; ``rank``: its
    ``places`` rank)."""
    cosine, keyword = basis.terms(ranked.score, mode)
    return Calibration(ranked.score, cosine, keyword, rank, relevance)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


def basis_of(pool: Pool, mode: SearchMode) -> Basis:
    """The pool's ``Basis`` in ``mode`` (hybrid: the means and spreads ``fuse.fused`` used)."""
    if mode is not SearchMode.HYBRID or not pool.candidates:
        return Basis(query_weight=pool.weight)
    lanes = fuse.lane_spreads(pool)
    return Basis(*lanes, query_weight=pool.weight)


def shown(
    ranked: Sequence[Ranked], pool: Pool, mode: SearchMode, model: str | None, k: int, min_score: float | None
) -> tuple[list[Calibration], list[float]]:
    """The first ``k`` ranked memories' calibrations whose relevance (``relevances``) is at least
    ``min_score`` (any without it), and the relevances of those ``min_score`` left out."""
    basis = basis_of(pool, mode)
    # a tie may reach past k; without min_score the ranks of the first k are enough
    ranks = places([r.score for r in ranked], k if min_score is None else None)
    if min_score is None:  # a relevance depends on those above it alone: the first k are enough
        ranked, ranks = ranked[:k], ranks[:k]
    scores = relevances(ranked, basis, mode, model, ranks)  # never rising: a prefix is kept
    kept = len(scores) if min_score is None else sum(score >= min_score for score in scores)
    scored = [
        calibration(r, n, score, basis, mode)
        for n, r, score in zip(ranks[: min(k, kept)], ranked, scores, strict=False)
    ]
    return scored, scores[kept:]
