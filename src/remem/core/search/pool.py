"""A search's candidate pool: what the back-end is asked, once per lane and signal, and the value
``fuse`` ranks without any I/O.

A candidate carries each lane's rank and raw score (the vector lane's best-window cosine, the
keyword lane's BM25), the share of the query's IDF weight its terms cover, its turn (conversation,
user, created_at, role) if it is one, whether the model reads its script, whether it lies inside
the window the query's time words name, and whether it holds the query as a phrase.

The back-end calls of a hybrid search, each over the search's filters (``gather``): the keyword
lane's top; the turns among them (the speakers the query names are roles of these); the vector
lane's top; the cosines of the keyword matches beyond that top; the BM25 of the vector top's
memories beyond the keyword top and their turns; the keyword coverage of every match; the pool's
texts where word order or scripts need them. A query with time words asks each lane once more
within the window (those answers mark which candidates are from then, and bring the window's own
best into the pool); a query with quoted phrases first asks which memories hold them. Keyword mode
asks its lane's top and the query's IDF weight (a coverage of no memory), which the shown
score counts BM25 against (``calibration``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple

from remem.core import scripts
from remem.core.search import phrases, speakers
from remem.types import Lane, SearchMode

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.base import Backend, Coverage, Scored, TurnTime, VectorLane
    from remem.core.search.query import Query
    from remem.types import Filters

    #: Embeds a text as a query (the model of the search).
    QueryEmbedder = Callable[[str], FloatArray]

#: How deep each lane looks before fusion: at least this many, and at least 4 × the requested k.
MIN_HYBRID_DEPTH = 100
#: A keyword match counts whole from this share of the query's IDF-weighted terms on (``fuse``).
FULL_COVERAGE = 0.2


class Candidate(NamedTuple):
    """One pooled memory and what fusion reads of it (see the module docstring). A named tuple: a
    pool makes hundreds per search (a frozen dataclass took 0.53 ms for 200, this 0.07 ms)."""

    id: int
    vector: Lane | None = None
    keyword: Lane | None = None
    #: The share of the query's IDF weight its terms match (1: counted whole).
    share: float = 1.0
    turn: TurnTime | None = None
    #: Written in another script than the query's, for a model blind across scripts.
    unread: bool = False
    #: Created inside the window the query's time words name.
    in_window: bool = False
    #: Holds the whole query as a phrase (word order, ``phrases``).
    phrase: bool = False


@dataclass(frozen=True)
class Pool:
    """The candidates of one search, in id order, and what fusion reads of the query's side: its
    IDF weight (None: matches count whole and BM25's spread has no floor) and the speakers it names."""

    candidates: tuple[Candidate, ...] = ()
    weight: float | None = None
    speakers: frozenset[str] = frozenset()
    #: Whether the query's time words named a window (then ``in_window`` says who is inside).
    windowed: bool = False

    @classmethod
    def of_lanes(
        cls,
        vector: Sequence[Scored],
        keyword: Sequence[Scored],
        unread: Collection[int] = (),
        coverage: Coverage | None = None,
        *,
        times: Mapping[int, TurnTime] | None = None,
        inside: Collection[int] = (),
        speakers: frozenset[str] = frozenset(),
        windowed: bool = False,
    ) -> Pool:
        """The pool of two best-first (id, score) lists (a lane's rank is the place in its list),
        ``unread`` ids, the ``coverage`` of the keyword matches, the turns among them (``times``),
        the window's members (``inside``), the speakers the query names, and whether it named a
        window."""
        vectors, keywords = _lanes(vector), _lanes(keyword)
        shares, times = coverage.shares if coverage else {}, times or {}
        candidates = tuple(
            Candidate(
                mid,
                vectors.get(mid),
                keywords.get(mid),
                shares.get(mid, 1.0),
                times.get(mid),
                mid in unread,
                mid in inside,
            )
            for mid in sorted(vectors.keys() | keywords.keys())
        )
        return cls(candidates, coverage.weight if coverage else None, speakers, windowed)


def _lanes(scored: Sequence[Scored]) -> dict[int, Lane]:
    """Memory id → its Lane (1-based place in the list, score)."""
    return {mid: Lane(place, score) for place, (mid, score) in enumerate(scored, start=1)}


@dataclass
class Texts:
    """The texts of candidate memories, fetched once per search as the signals need them."""

    backend: Backend
    known: dict[int, str] = field(default_factory=dict)

    def of(self, memory_ids: Sequence[int]) -> dict[int, str]:
        """Memory id → text for these ids (and any fetched before); missing ids are absent."""
        missing = [mid for mid in memory_ids if mid not in self.known]
        if missing:
            self.known.update(self.backend.texts(missing))
        return self.known


@dataclass(frozen=True)
class Asked:
    """What a search asks of the back-end: the store, its vector lane and the query embedder (None
    in keyword mode), the filters, how many hits, and the memories holding the required phrases."""

    backend: Backend
    lane: VectorLane | None
    embed: QueryEmbedder | None
    filters: Filters
    k: int
    among: list[int] | None = None

    def windowed(self, query: Query) -> Filters | None:
        """The filters narrowed to the query's window (to mark its members), within their own
        since/until; None without a window, or when the two do not overlap."""
        bounds = query.window_filters
        if bounds is None:
            return None
        since = max(bounds[0], self.filters.since or bounds[0])
        until = min((end for end in (bounds[1], self.filters.until) if end is not None), default=None)
        if until is not None and since >= until:
            return None
        return replace(self.filters, since=since, until=until)


def gather(asked: Asked, query: Query, mode: SearchMode) -> Pool:
    """The pool of a search in ``mode`` (see the module docstring); empty when a required phrase is
    held by no filtered memory."""
    texts = Texts(asked.backend)
    held = phrases.holders(asked.backend, query.phrases, asked.filters)
    if held is not None and not held:
        return Pool()
    texts.known.update(held or {})
    asked = replace(asked, among=None if held is None else list(held))
    if mode is SearchMode.KEYWORD:
        depth = max(MIN_HYBRID_DEPTH, 4 * asked.k) if query.phrases else asked.k
        found, inside = _with_window(lambda f: _keyword_top(asked, query, f, depth), asked, query)
        weight = _query_weight(asked, query, found)  # what the shown score counts BM25 against
        pool = Pool.of_lanes([], found, inside=inside, windowed=query.window is not None)
        pool = replace(pool, weight=weight)
    elif asked.lane is None or asked.embed is None:
        raise ValueError(f"{mode.value} search needs the vector lane and a query embedder")
    elif mode is SearchMode.HYBRID:
        pool = _hybrid(asked, query, texts)
    else:
        pool = _vector(asked, query, texts)
    return _with_phrases(pool, query, texts, mode)


def _query_weight(asked: Asked, query: Query, found: Sequence[Scored]) -> float | None:
    """The query's whole IDF weight (``Coverage.weight``; None when nothing matched), asked with the
    coverage of no memory (only the terms' statistics: 0.1 ms instead of 3 ms a query on SciFact)."""
    if not found:
        return None
    return asked.backend.keyword_coverage(query.text, [], FULL_COVERAGE, query.scope).weight


def _with_window(
    fetch: Callable[[Filters], list[Scored]], asked: Asked, query: Query
) -> tuple[list[Scored], set[int]]:
    """A lane's best-first list over the filters and, with a window, its top within the window
    merged in (by score); the ids from the window. A lane's top within the window holds every
    member of its top over the filters that is from then, so every such candidate is marked."""
    found = fetch(asked.filters)
    windowed = asked.windowed(query)
    if windowed is None:
        return found, set()
    inside = fetch(windowed)
    seen = {mid for mid, _ in found}
    merged = sorted(found + [item for item in inside if item[0] not in seen], key=lambda item: -item[1])
    return merged, {mid for mid, _ in inside}


def _keyword_top(
    asked: Asked, query: Query, filters: Filters, depth: int, among: Sequence[int] | None = None
) -> list[Scored]:
    """The keyword lane's top ``depth`` (only ``among``, or the phrase holders, if given)."""
    among = asked.among if among is None else among
    return asked.backend.keyword_top(query.text, filters, depth, among, query.scope)


def _cosine_top(asked: Asked, vector: FloatArray, k: int, filters: Filters) -> list[Scored]:
    """The vector lane's top ``k`` among the filtered memories (only the phrase holders if given)."""
    assert asked.lane is not None
    if asked.among is None:
        return asked.lane.top(vector, k, filters)
    return asked.lane.cosines(vector, asked.among)[:k]


def _vector(asked: Asked, query: Query, texts: Texts) -> Pool:
    """Vector mode's pool: the vector lane's top k (deeper, and in the query's script first, for a
    model blind across scripts)."""
    assert asked.embed is not None
    vector = asked.embed(query.text)
    depth = max(asked.k, MIN_HYBRID_DEPTH) if query.blind_across_scripts else asked.k
    found, inside = _with_window(lambda f: _cosine_top(asked, vector, depth, f), asked, query)
    if query.blind_across_scripts:
        found = _script_first(found, query, texts)
    unread = _unread(found, query, texts)
    return Pool.of_lanes(found, [], unread, inside=inside, windowed=query.window is not None)


def _script_first(found: Sequence[Scored], query: Query, texts: Texts) -> list[Scored]:
    """The vector lane's list with the memories in the query's script first (``scripts``)."""
    return scripts.query_script_first(found, query.cjk, texts.of([mid for mid, _ in found]))


def _hybrid(asked: Asked, query: Query, texts: Texts) -> Pool:
    """Hybrid mode's pool: both lanes' tops, each scoring the other's (see the module docstring)."""
    assert asked.lane is not None and asked.embed is not None
    backend, lane, depth = asked.backend, asked.lane, max(MIN_HYBRID_DEPTH, 4 * asked.k)
    by_keyword, inside = _with_window(lambda f: _keyword_top(asked, query, f, depth), asked, query)
    times = backend.turn_times([mid for mid, _ in by_keyword]) if by_keyword else {}
    named = speakers.named(query.names, times)
    vector = asked.embed(query.vector_text(named))
    top, inside_top = _with_window(lambda f: _cosine_top(asked, vector, depth, f), asked, query)
    seen = {mid for mid, _ in top}
    extra = [mid for mid, _ in by_keyword if mid not in seen]
    by_vector = top + lane.cosines(vector, extra) if extra else top
    if query.blind_across_scripts:
        by_vector = _script_first(by_vector, query, texts)
    matched = {mid for mid, _ in by_keyword}
    missing = [mid for mid, _ in by_vector if mid not in matched]
    if missing:
        by_keyword = by_keyword + _keyword_top(asked, query, asked.filters, len(missing), missing)
        times |= backend.turn_times(missing)
    matches = [mid for mid, _ in by_keyword]
    coverage = backend.keyword_coverage(query.text, matches, FULL_COVERAGE, query.scope) if matches else None
    unread = _unread(by_vector, query, texts)
    return Pool.of_lanes(
        by_vector,
        by_keyword,
        unread,
        coverage,
        times=times,
        inside=inside | inside_top,
        speakers=named,
        windowed=query.window is not None,
    )


def _unread(by_vector: Iterable[Scored], query: Query, texts: Texts) -> set[int]:
    """For a model blind across scripts, the pooled memories in another script than the query's."""
    if not query.blind_across_scripts:
        return set()
    ids = [mid for mid, _ in by_vector]
    return scripts.in_other_script(ids, query.cjk, texts.of(ids))


def _with_phrases(pool: Pool, query: Query, texts: Texts, mode: SearchMode) -> Pool:
    """The pool without memories lacking a required phrase, each marked if it holds the whole query
    as a phrase (word order counts in hybrid and keyword modes)."""
    wanted = query.phrases
    if not wanted or mode is SearchMode.VECTOR:
        return pool
    known = texts.of([c.id for c in pool.candidates])
    kept = (c for c in pool.candidates if c.id in known and wanted.allows(known[c.id]))
    marked = tuple(c._replace(phrase=wanted.matches(known[c.id])) for c in kept)
    return replace(pool, candidates=marked)
