"""Ranking above any back-end: the lanes' results in each mode, and their fusion (z-scores).

Hybrid search pools each lane's top ``depth`` and then lets *both* lanes score every pooled memory —
the vector lane by its exact cosine, the keyword lane by BM25 (0 for a memory the query's words do
not match; a match covering less than ``FULL_COVERAGE`` of the query's IDF-weighted terms counts in
proportion). Each memory's fused score is a convex mix of the two lanes' standardised scores:
``VECTOR_WEIGHT`` × z(cosine) + (1 − ``VECTOR_WEIGHT``) × z(BM25), where z is (x − mean) / std over
the pool — the cosines' std at least ``COSINE_SPREAD_FLOOR`` of their mean distance from 1, BM25's
at least ``KEYWORD_SPREAD_FLOOR`` of the query's weight, so that in a small pool, or where few
memories match, a small difference does not stand out as a large one would. Unlike rank fusion this
keeps how far apart the scores are: a memory far ahead in one lane stays ahead. A model blind across
scripts does not read memories in another script than the query's: they get the pool's lowest cosine.
The turns of a conversation then gain from their best session mates' scores (``sessions``); the
speakers a query names are left out of its vector, and their turns gain after fusion (``speakers``).

Word order (``phrases``): in hybrid and keyword modes a memory holding the whole query as a phrase
outranks the others. Quoted phrases are required in every mode: a filter over the whole store, so the
lanes rank only the memories holding them. An English-only model's vector lane ranks memories in the
query's script first (``scripts``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from remem.core import phrases, scripts, sessions, snippets, speakers
from remem.errors import ConnectionLostError, ModelChangedError
from remem.reports import SearchResult
from remem.types import Filters, Hit, Lane, Memory, ModelInfo, SearchMode

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.base import Backend, Coverage, Scored, TurnTime, VectorLane
    from remem.embedders.base import Embedder, Embeddings

    #: Embeds a text as a query (the model of the search).
    QueryEmbedder = Callable[[str], FloatArray]

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
#: A keyword match counts whole from this share of the query's IDF-weighted terms on, and in
#: proportion below: one common word shared by chance ("flow", "server") must not outvote meaning,
#: while a rare identifier carries most of a query's weight on its own. Dropping weaker matches, as
#: RRF did: LoCoMo 0.7018; counting every match whole: 0.7413, 0.7153, 0.907, CJK 0.12 / 0.56;
#: 0.1: 0.7414, 0.7143, CJK 0.14 / 0.56; 0.3: 0.7322, 0.7124.
FULL_COVERAGE = 0.2
#: BM25's spread over the pool, in the z-score, is at least this share of the query's whole IDF
#: weight: where few memories match, a weak match would otherwise stand out as far as a strong one
#: (a z-score is blind to scale). None: 0.7413, 0.7161, 0.907, CJK 0.07 / 0.44 (a query's character
#: pairs shared by chance); 0.06: 0.7412, 0.7169, CJK 0.14 / 0.58; 0.1: 0.7396, 0.7076.
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
#: How deep each lane looks before fusion: at least this many, and at least 4 × the requested k.
MIN_HYBRID_DEPTH = 100


@dataclass(frozen=True)
class Ranked:
    """A memory id with its lanes, before the memory itself is fetched."""

    id: int
    score: float
    vector: Lane | None
    keyword: Lane | None


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
class Query:
    """A query's text and what ranks it besides the lanes: its phrases, whether the model's vector
    lane is blind across scripts, and the speakers it names."""

    text: str
    phrases: phrases.Phrases
    blind_across_scripts: bool = False
    #: The speakers it names (``speakers``; hybrid search embeds it without them).
    speakers: frozenset[str] = frozenset()
    #: The memories whose statistics the keyword lane counts (``Memories.search``'s scope; None:
    #: the whole store's).
    scope: Filters | None = None

    @classmethod
    def of(cls, text: str, languages: Sequence[str] = (), scope: Filters | None = None) -> Query:
        """The query ``text`` for a model declaring ``languages``, its statistics ``scope``'s."""
        return cls(text, phrases.of_query(text), scripts.blind_across_scripts(languages), scope=scope)


def by_phrase(ranked: list[Ranked], query: Query, texts: Texts, mode: SearchMode) -> list[Ranked]:
    """Drop memories lacking a required phrase; put whole-query phrase matches first, each group in
    its order (fused score or BM25)."""
    wanted = query.phrases
    if not wanted or mode is SearchMode.VECTOR:
        return ranked
    known = texts.of([r.id for r in ranked])
    kept = [r for r in ranked if r.id in known and wanted.allows(known[r.id])]
    if not wanted.whole:
        return kept
    matched = {r.id for r in kept if wanted.matches(known[r.id])}
    return [r for r in kept if r.id in matched] + [r for r in kept if r.id not in matched]


def _cosine_top(
    lane: VectorLane, vector: FloatArray, k: int, filters: Filters, among: Sequence[int] | None
) -> list[Scored]:
    """The vector lane's top ``k`` among the filtered memories (only ``among`` if given)."""
    return lane.top(vector, k, filters) if among is None else lane.cosines(vector, among)[:k]


def _vector_top(
    lane: VectorLane,
    vector: FloatArray,
    k: int,
    filters: Filters,
    query: Query,
    texts: Texts,
    among: Sequence[int] | None = None,
) -> list[Scored]:
    """The vector lane's top ``k`` (only ``among`` if given): deeper, and in the query's script
    first, for a model blind across scripts."""
    if not query.blind_across_scripts:
        return _cosine_top(lane, vector, k, filters, among)
    found = _cosine_top(lane, vector, max(k, MIN_HYBRID_DEPTH), filters, among)
    return scripts.query_script_first(found, query.text, texts.of([mid for mid, _ in found]))


def best_first(ranked: list[Ranked], unread: Collection[int] = ()) -> list[Ranked]:
    """By score, ties broken by the better vector score (none for a memory the model cannot read),
    then the smaller id (deterministic)."""
    return sorted(
        ranked,
        key=lambda r: (-r.score, -(r.vector.score if r.vector and r.id not in unread else -2.0), r.id),
    )


def _ranked(scored: Sequence[Scored]) -> list[tuple[int, tuple[float, Lane]]]:
    return [(mid, (score, Lane(place, score))) for place, (mid, score) in enumerate(scored, start=1)]


def _lanes(scored: Sequence[Scored]) -> dict[int, Lane]:
    return {mid: lane for mid, (_, lane) in _ranked(scored)}


def standardised(values: Sequence[float], floor: float = 0.0) -> list[float]:
    """The z-scores of ``values``: (x − mean) / their population std, or ``floor`` where that is
    larger; a spread of 0 counts as 1."""
    mean = sum(values) / len(values)
    spread = max((sum((x - mean) ** 2 for x in values) / len(values)) ** 0.5, floor)
    return [(x - mean) / (spread or 1.0) for x in values]


def keyword_evidence(bm25: float, share: float) -> float:
    """A match's BM25 as the fusion counts it: whole from FULL_COVERAGE of the query's term weight
    on, in proportion below."""
    return bm25 * min(1.0, share / FULL_COVERAGE)


def fuse(
    vector_ranked: Sequence[Scored],
    keyword_ranked: Sequence[Scored],
    unread: Collection[int] = (),
    coverage: Coverage | None = None,
) -> list[Ranked]:
    """The z-score fusion of two best-first (id, score) lists over their union, best first
    (``best_first``; see the module docstring). A memory absent from the vector list, or ``unread``
    by the model, gets the lowest cosine of the pool's read memories (and no cosine to break ties).
    ``coverage`` (of the keyword matches) damps weak matches and floors BM25's spread; without it
    every match counts whole and the spread has no floor."""
    vector, keyword = _lanes(vector_ranked), _lanes(keyword_ranked)
    pool = sorted(vector.keys() | keyword.keys())
    if not pool:
        return []
    read = [vector[mid].score for mid in pool if mid in vector and mid not in unread]
    lowest = min(read, default=0.0)
    cosines = [vector[mid].score if mid in vector and mid not in unread else lowest for mid in pool]
    shares = coverage.shares if coverage else {}
    bm25 = [
        keyword_evidence(keyword[mid].score, shares.get(mid, 1.0)) if mid in keyword else 0.0 for mid in pool
    ]
    floor = KEYWORD_SPREAD_FLOOR * coverage.weight if coverage else 0.0
    distance = 1.0 - sum(cosines) / len(cosines)
    scores = zip(
        pool, standardised(cosines, COSINE_SPREAD_FLOOR * distance), standardised(bm25, floor), strict=True
    )
    return best_first(
        [
            Ranked(mid, VECTOR_WEIGHT * c + (1 - VECTOR_WEIGHT) * b, vector.get(mid), keyword.get(mid))
            for mid, c, b in scores
        ],
        unread,
    )


def unread_by_model(by_vector: list[Scored], query: Query, texts: Texts) -> set[int]:
    """For a model blind across scripts, the pooled memories in another script than the query's."""
    if not query.blind_across_scripts:
        return set()
    ids = [mid for mid, _ in by_vector]
    return scripts.in_other_script(ids, query.text, texts.of(ids))


def fused_vector_lane(
    lane: VectorLane,
    vector: FloatArray,
    by_vector: list[Scored],
    by_keyword: list[Scored],
    query: Query,
    texts: Texts,
) -> list[Scored]:
    """The vector lane over the whole pool: its top, then the keyword matches beyond it (by cosine);
    for a model blind across scripts, the query's script first."""
    seen = {mid for mid, _ in by_vector}
    extra = [mid for mid, _ in by_keyword if mid not in seen]
    if extra:
        by_vector = by_vector + lane.cosines(vector, extra)
    if query.blind_across_scripts:
        by_vector = scripts.query_script_first(by_vector, query.text, texts.of([mid for mid, _ in by_vector]))
    return by_vector


def hybrid_rank(
    backend: Backend,
    lane: VectorLane,
    query: Query,
    embed: QueryEmbedder,
    k: int,
    filters: Filters,
    texts: Texts,
    among: Sequence[int] | None = None,
) -> list[Ranked]:
    """Both lanes over the same filtered memories (only ``among`` if given), pooled and fused, then
    the turns of a conversation lifted by their session mates and the speakers the query names (see
    the module docstring). ``embed`` embeds the query, without those speakers."""
    depth = max(MIN_HYBRID_DEPTH, 4 * k)
    text = query.text
    by_keyword = backend.keyword_top(text, filters, depth, among, query.scope)
    times = backend.turn_times([mid for mid, _ in by_keyword]) if by_keyword else {}
    query = replace(query, speakers=speakers.named(text, times))
    vector = embed(speakers.without(text, query.speakers) or text)
    top = _cosine_top(lane, vector, depth, filters, among)
    by_vector = fused_vector_lane(lane, vector, top, by_keyword, query, texts)
    matched = {mid for mid, _ in by_keyword}
    missing = [mid for mid, _ in by_vector if mid not in matched]
    if missing:
        by_keyword = by_keyword + backend.keyword_top(text, filters, len(missing), missing, query.scope)
        times |= backend.turn_times(missing)
    matches = [mid for mid, _ in by_keyword]
    coverage = backend.keyword_coverage(text, matches, FULL_COVERAGE, query.scope) if matches else None
    unread = unread_by_model(by_vector, query, texts)
    ranked = fuse(by_vector, by_keyword, unread, coverage)
    return best_first(_lifted(ranked, times, query.speakers), unread) if len(times) > 1 else ranked


def _lifted(ranked: list[Ranked], times: Mapping[int, TurnTime], names: Collection[str]) -> list[Ranked]:
    """The fused pool with what each turn's session mates add to its score (``sessions``), then its
    speaker if the query names them (``speakers``)."""
    lifted = sessions.lifts({r.id: r.score for r in ranked}, times) if len(times) > 1 else {}
    named = speakers.lifts(times, names)
    if not lifted and not named:
        return ranked
    return [replace(r, score=r.score + lifted.get(r.id, 0.0) + named.get(r.id, 0.0)) for r in ranked]


def rank(
    backend: Backend,
    lane: VectorLane | None,
    query: Query,
    embed: QueryEmbedder | None,
    k: int,
    filters: Filters,
    mode: SearchMode,
) -> list[Ranked]:
    """The best memories for a query in the given mode, best first, at least ``k`` where there are
    (hybrid: the pool), word order applied (see the module docstring); with required phrases, the
    lanes rank only the memories holding them."""
    texts = Texts(backend)
    held = phrases.holders(backend, query.phrases, filters)
    if held is not None and not held:
        return []
    texts.known.update(held or {})
    among = None if held is None else list(held)
    if mode is SearchMode.KEYWORD:
        depth = max(MIN_HYBRID_DEPTH, 4 * k) if query.phrases else k
        ranked = [
            Ranked(mid, s, None, found)
            for mid, (s, found) in _ranked(
                backend.keyword_top(query.text, filters, depth, among, query.scope)
            )
        ]
    elif lane is None or embed is None:
        raise ValueError(f"{mode.value} search needs the vector lane and a query embedder")
    elif mode is SearchMode.HYBRID:
        ranked = hybrid_rank(backend, lane, query, embed, k, filters, texts, among)
    else:
        by_vector = _vector_top(lane, embed(query.text), k, filters, query, texts, among)
        ranked = [Ranked(mid, s, found, None) for mid, (s, found) in _ranked(by_vector)]
    return by_phrase(ranked, query, texts, mode)


def run_search(
    backend: Backend,
    text: str,
    embed: QueryEmbedder | FloatArray | None,
    k: int,
    filters: Filters,
    *,
    mode: SearchMode = SearchMode.VECTOR,
    min_score: float | None = None,
    embedded_with: ModelInfo | None = None,
    languages: Sequence[str] = (),
    scope: Filters | None = None,
) -> SearchResult:
    """Rank, apply ``min_score`` (a cosine; not for keyword mode), cut to ``k``, fetch the memories.

    A store without vectors finds nothing outside keyword mode. With ``embedded_with``, raises
    ModelChangedError if the store no longer uses that model (a re-embed was swapped in meanwhile).
    ``embed`` embeds the query (``text``, or hybrid search's text without the speakers it names) as
    ``embedded_with``, or is the query's vector (then always the whole query's); ``languages`` are
    those the query's model declares (see ``scripts``); the keyword lane counts the statistics of
    ``scope``'s memories (which hold every filtered one), or the whole store's.
    """
    if min_score is not None and mode is SearchMode.KEYWORD:
        raise ValueError("min_score is a cosine; keyword search has none")
    with backend.snapshot():  # both lanes and the memories they name: one state of the store
        lane = None
        if mode is not SearchMode.KEYWORD:
            if backend.model is None:
                return SearchResult()
            lane = backend.vector_lane(embedded_with)
        embedding = embed if embed is None or callable(embed) else _always(embed)
        ranked = rank(backend, lane, Query.of(text, languages, scope), embedding, k, filters, mode)
        below = []
        if min_score is not None:
            below = [r.vector.score for r in ranked if r.vector is not None and r.vector.score < min_score]
            ranked = [r for r in ranked if r.vector is not None and r.vector.score >= min_score]
        ranked = ranked[:k]
        memories = backend.get_many([r.id for r in ranked])
    return SearchResult(_hits(ranked, memories, text), len(below), max(below) if below else None)


def _always(vector: FloatArray) -> QueryEmbedder:
    """An embedder that gives ``vector`` for any text."""
    return lambda _text: vector


def _hits(ranked: list[Ranked], memories: dict[int, Memory], text: str) -> list[Hit]:
    """The ranked memories as hits, a long text with the snippet the query matched (``snippets``)."""
    terms: list[str] | None = None  # the query's terms, found only when a hit is long
    hits = []
    for r in ranked:
        memory = memories.get(r.id)
        if memory is None:
            continue
        snippet = None
        if len(memory.text) > snippets.LONG_TEXT:
            terms = snippets.query_terms(text) if terms is None else terms
            snippet = snippets.snippet_of(memory.text, terms)
        hits.append(Hit(memory, r.score, r.vector, r.keyword, snippet))
    return hits


def _query_notes(
    model: str, languages: Sequence[str], text: str, dropped: int, mode: SearchMode
) -> tuple[str, ...]:
    """What a person should know about how the model read the query: tokens beyond its window, a
    script it cannot read (``scripts.unread_query_note``)."""
    cut = f"The query's last {dropped} tokens were beyond the model window and were not used."
    unread = scripts.unread_query_note(model, languages, text, vector_only=mode is SearchMode.VECTOR)
    return (*([cut] if dropped else []), *([unread] if unread else []))


@dataclass
class QueryEmbedding:
    """Embeds a search's query with its model, keeping the last embedding (for the query's notes)."""

    model: Embedder
    last: Embeddings | None = None

    @property
    def languages(self) -> Sequence[str]:
        """The languages the model declares (none: any)."""
        return tuple(getattr(self.model, "languages", ()))

    def __call__(self, text: str) -> FloatArray:
        """``text``'s query vector."""
        self.last = self.model.embed_queries([text])
        vector: FloatArray = self.last.vectors[0]
        return vector


def search_with_retry(
    backend: Backend,
    embedder: Callable[[], Embedder],
    reload_model: Callable[[], None],
    text: str,
    k: int,
    filters: Filters,
    mode: SearchMode,
    min_score: float | None,
    scope: Filters | None = None,
) -> SearchResult:
    """Embed the query (not in keyword mode) and search (``run_search``, with ``scope``); once more,
    with the model chosen again, if a re-embed swapped the store's model meanwhile, or the connection
    was lost midway. A store without vectors finds nothing outside keyword mode, without choosing or
    loading a model."""
    if mode is not SearchMode.KEYWORD and backend.model is None:
        return SearchResult()
    for attempt in range(2):
        embed = None if mode is SearchMode.KEYWORD else QueryEmbedding(embedder())  # keyword: no model
        try:
            found = run_search(
                backend,
                text,
                embed,
                k,
                filters,
                mode=mode,
                min_score=min_score,
                embedded_with=None if embed is None else embed.model.info,
                languages=() if embed is None else embed.languages,
                scope=scope,
            )
            if embed is None:
                return found
            dropped = embed.last.dropped_tokens[0] if embed.last else 0
            notes = _query_notes(embed.model.info.name, embed.languages, text, dropped, mode)
            return replace(found, notes=notes)
        except ConnectionLostError:  # a read changes nothing: once more, on a new connection
            if attempt:
                raise
        except ModelChangedError:
            if attempt:
                raise
            reload_model()
    raise AssertionError("unreachable")
