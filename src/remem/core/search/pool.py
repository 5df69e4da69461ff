"""A search's candidate pool: what the back-end is asked, in one call (``Backend.pool``), and the
value ``fuse`` ranks without any I/O.

A candidate carries each lane's rank and raw score (the vector lane's best-window cosine, the
keyword lane's BM25), the share of the query's IDF weight its terms cover, its turn (conversation,
user, created_at, role) if it is one, whether the model reads its script, whether it lies inside
the window the query's time words name, and whether it holds the query as a phrase.

``gather`` turns the query into one ``PoolRequest`` (the keyword text, the query's vector for the
speakers it names, the filters, each lane's depth, the window's filters, the required phrases, the
names, the statistics' scope, whether texts are needed, and the query's script for a model blind
across scripts; ``remem.backends.pooling`` says what the back-end does with it) and the
``PoolAnswer`` into Candidates: the vector list in the query's script first (the back-end names the
memories in the other one), the memories lacking a required phrase left out, and word order
marked. A keyword pool's answer brings the query's IDF weight (a coverage of no memory), which the
shown score counts BM25 against (``calibration``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

from remem.backends.base import PoolRequest
from remem.core.search import speakers
from remem.types import Lane, SearchMode

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.base import Backend, Coverage, Scored, TurnTime, VectorOf
    from remem.core.search.query import Query
    from remem.types import Filters, ModelInfo

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


@dataclass(frozen=True)
class Asked:
    """What a search asks of the back-end: the store, the query embedder (None in keyword mode) and
    the model it embeds with (None: any), the filters and how many hits."""

    backend: Backend
    embed: QueryEmbedder | None
    filters: Filters
    k: int
    model: ModelInfo | None = None

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


def request(asked: Asked, query: Query, mode: SearchMode, vector: VectorOf | None) -> PoolRequest:
    """The one request a search in ``mode`` makes of the back-end for its pool, the query's vector
    made by ``vector`` (None in keyword mode)."""
    required = query.phrases.required
    # a model blind across scripts puts the query's first (``scripts``): the back-end tells which
    script = query.cjk if query.blind_across_scripts and mode is not SearchMode.KEYWORD else None
    return PoolRequest(
        query.text,
        asked.filters,
        _depth(asked.k, query, mode),
        keyword=mode is not SearchMode.VECTOR,
        vector=vector,
        model=asked.model,
        window=asked.windowed(query),
        phrase_words=query.phrases.required_words,
        holds=query.phrases.allows if required else None,
        speakers=bool(query.names) and mode is SearchMode.HYBRID,
        scope=query.scope,
        enough=FULL_COVERAGE,
        texts=(bool(query.phrases) and mode is not SearchMode.VECTOR) or script is not None,
        cjk=script,
    )


def _depth(k: int, query: Query, mode: SearchMode) -> int:
    """How deep each lane looks: hybrid (and keyword with phrases) at least MIN_HYBRID_DEPTH and
    4 × k; vector at least MIN_HYBRID_DEPTH for a model blind across scripts; else k."""
    if mode is SearchMode.HYBRID or (mode is SearchMode.KEYWORD and query.phrases):
        return max(MIN_HYBRID_DEPTH, 4 * k)
    if mode is SearchMode.VECTOR and query.blind_across_scripts:
        return max(k, MIN_HYBRID_DEPTH)
    return k


@dataclass
class _Embedding:
    """The query's vector as the back-end asks for it (``pooling.VectorOf``): in hybrid mode without
    the speakers it names (``speakers``: its names that are roles of the keyword top's turns),
    which it keeps for fusion; in vector mode the whole query."""

    embed: QueryEmbedder
    query: Query
    hybrid: bool
    named: frozenset[str] = frozenset()

    def __call__(self, turns: Mapping[int, TurnTime]) -> FloatArray:
        """The query's vector, given the keyword top's turns."""
        if not self.hybrid:
            return self.embed(self.query.text)
        self.named = speakers.named(self.query.names, turns)
        return self.embed(self.query.vector_text(self.named))


def gather(asked: Asked, query: Query, mode: SearchMode) -> Pool:
    """The pool of a search in ``mode``: one ``Backend.pool`` call (see the module docstring);
    empty when a required phrase is held by no filtered memory."""
    embedding = None
    if mode is not SearchMode.KEYWORD:
        if asked.embed is None:
            raise ValueError(f"{mode.value} search needs a query embedder")
        embedding = _Embedding(asked.embed, query, mode is SearchMode.HYBRID)
    answer = asked.backend.pool(request(asked, query, mode, embedding))
    if not answer.held:
        return Pool()
    pool = Pool.of_lanes(  # a keyword pool's coverage is of no memory: the query's IDF weight alone
        _script_first(answer.vector, answer.unread),
        answer.keyword,
        answer.unread,
        answer.coverage,
        times=answer.turns,
        inside=answer.inside,
        speakers=embedding.named if embedding else frozenset(),
        windowed=query.window is not None,
    )
    return _with_phrases(pool, query, answer.texts, mode)


def _script_first(by_vector: Sequence[Scored], unread: Collection[int]) -> Sequence[Scored]:
    """The vector lane's list with the memories in the query's script first (those not ``unread``),
    each part in its order."""
    if not unread:
        return by_vector
    return [item for item in by_vector if item[0] not in unread] + [
        item for item in by_vector if item[0] in unread
    ]


def _with_phrases(pool: Pool, query: Query, known: Mapping[int, str], mode: SearchMode) -> Pool:
    """The pool's memories whose texts are ``known``, each marked if it holds the whole query as a
    phrase (word order counts in hybrid and keyword modes). The back-end pooled only the holders of
    the required phrases (``PoolRequest.holds``)."""
    wanted = query.phrases
    if not wanted or mode is SearchMode.VECTOR:
        return pool
    kept = (c for c in pool.candidates if c.id in known)  # none is marked yet: copy only the holders
    marked = tuple(c._replace(phrase=True) if wanted.matches(known[c.id]) else c for c in kept)
    return replace(pool, candidates=marked)
