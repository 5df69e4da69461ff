"""Ranking above any back-end: the lanes' results in each mode, and their fusion (RRF).

Hybrid search pools each lane's top ``depth`` and then lets *both* lanes rank every pooled memory —
the vector lane by its exact cosine (pooled memories beyond its top ``depth`` rank after it, by
cosine), the keyword lane by BM25 among the pooled memories that match at least
``MIN_KEYWORD_COVERAGE`` (a fifth) of the query's IDF-weighted terms (the others get no keyword
rank). Each memory's fused score is Reciprocal Rank Fusion: the sum over lanes of 1 / (RRF_K + rank).

Word order (``phrases``): in hybrid and keyword modes a memory holding the whole query as a phrase
outranks the others. Quoted phrases are required in every mode: a filter over the whole store, so the
lanes rank only the memories holding them. An English-only model's vector lane ranks memories in the
query's script first (``scripts``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from remem.core import phrases, scripts, snippets
from remem.errors import ConnectionLostError, ModelChangedError
from remem.reports import SearchResult
from remem.types import Filters, Hit, Lane, Memory, ModelInfo, SearchMode

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.base import Backend, Scored, VectorLane
    from remem.embedders.base import Embedder

#: The RRF constant (Cormack, Clarke & Büttcher, SIGIR 2009, used 60): it damps the weight of the
#: top ranks so that one lane's first place does not outvote agreement between lanes. Chosen on
#: SciFact, LoCoMo and the memory-shaped set together (hybrid nDCG@10 / evidence recall@10 / hit@1):
#: 60 → 0.7178 / 0.664 / 0.93; 30 → 0.7230 / 0.679 / 0.93; 20 → 0.7258 / 0.698 / 0.93;
#: 10 → 0.7266 / 0.715 / 0.93; 5 → — / 0.715 / —. Weighting the vector lane 0.7 lost on all three.
RRF_K = 10
#: In hybrid mode a keyword match counts only if it matches at least this share of the query's
#: IDF-weighted terms: one common word shared by chance ("flow", "server") must not outvote meaning,
#: while a rare identifier carries most of a query's weight on its own.
MIN_KEYWORD_COVERAGE = 0.2
#: How deep each lane looks before fusion: at least this many, and at least 4 × the requested k.
MIN_HYBRID_DEPTH = 100
#: Added to the fused score of a phrase match in hybrid mode: first place in both lanes is worth
#: 2 / (RRF_K + 1), so a phrase match outranks every memory without one.
PHRASE_BONUS = 2 / (RRF_K + 1)


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
    """A query's text and what ranks it besides the lanes: its phrases, and whether the model's
    vector lane is blind across scripts."""

    text: str
    phrases: phrases.Phrases
    blind_across_scripts: bool = False

    @classmethod
    def of(cls, text: str, languages: Sequence[str] = ()) -> Query:
        """The query ``text`` for a model declaring ``languages``."""
        return cls(text, phrases.of_query(text), scripts.blind_across_scripts(languages))


def by_phrase(ranked: list[Ranked], query: Query, texts: Texts, mode: SearchMode) -> list[Ranked]:
    """Drop memories lacking a required phrase; put phrase matches first (hybrid: PHRASE_BONUS on
    the fused score; keyword: before the others, each group by BM25)."""
    wanted = query.phrases
    if not wanted or mode is SearchMode.VECTOR:
        return ranked
    known = texts.of([r.id for r in ranked])
    kept = [r for r in ranked if r.id in known and wanted.allows(known[r.id])]
    if not wanted.whole:
        return kept
    matched = {r.id for r in kept if wanted.matches(known[r.id])}
    if mode is SearchMode.KEYWORD:
        return [r for r in kept if r.id in matched] + [r for r in kept if r.id not in matched]
    boosted = [replace(r, score=r.score + PHRASE_BONUS) if r.id in matched else r for r in kept]
    return best_first(boosted)


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


def best_first(ranked: list[Ranked]) -> list[Ranked]:
    """By score, ties broken by the better vector score, then the smaller id (deterministic)."""
    return sorted(ranked, key=lambda r: (-r.score, -(r.vector.score if r.vector else -2.0), r.id))


def _ranked(scored: Sequence[Scored]) -> list[tuple[int, tuple[float, Lane]]]:
    return [(mid, (score, Lane(place, score))) for place, (mid, score) in enumerate(scored, start=1)]


def _lanes(scored: Sequence[Scored]) -> dict[int, Lane]:
    return {mid: lane for mid, (_, lane) in _ranked(scored)}


def fuse(vector_ranked: Sequence[Scored], keyword_ranked: Sequence[Scored]) -> list[Ranked]:
    """Reciprocal Rank Fusion of two best-first (id, score) lists, best first (``best_first``)."""
    vector, keyword = _lanes(vector_ranked), _lanes(keyword_ranked)
    fused = []
    for mid in vector.keys() | keyword.keys():
        lanes = (vector.get(mid), keyword.get(mid))
        score = sum(1.0 / (RRF_K + lane.rank) for lane in lanes if lane is not None)
        fused.append(Ranked(mid, score, *lanes))
    return best_first(fused)


def _substantial(backend: Backend, text: str, scored: list[Scored]) -> list[Scored]:
    """Keep the keyword matches that cover at least MIN_KEYWORD_COVERAGE of the query's term weight."""
    if not scored:
        return scored
    covering = set(backend.keyword_covering(text, [mid for mid, _ in scored], MIN_KEYWORD_COVERAGE))
    return [(mid, score) for mid, score in scored if mid in covering]


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
    vector: FloatArray,
    k: int,
    filters: Filters,
    texts: Texts,
    among: Sequence[int] | None = None,
) -> list[Ranked]:
    """Both lanes over the same filtered memories (only ``among`` if given), pooled and fused (see
    the module docstring)."""
    depth = max(MIN_HYBRID_DEPTH, 4 * k)
    text = query.text
    by_keyword = _substantial(backend, text, backend.keyword_top(text, filters, depth, among))
    top = _cosine_top(lane, vector, depth, filters, among)
    by_vector = fused_vector_lane(lane, vector, top, by_keyword, query, texts)
    matched = {mid for mid, _ in by_keyword}
    missing = [mid for mid, _ in by_vector if mid not in matched]
    if missing:
        more = backend.keyword_top(text, filters, len(missing), among=missing)
        by_keyword = by_keyword + _substantial(backend, text, more)
    return fuse(by_vector, by_keyword)


def rank(
    backend: Backend,
    lane: VectorLane | None,
    query: Query,
    vector: FloatArray | None,
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
            for mid, (s, found) in _ranked(backend.keyword_top(query.text, filters, depth, among))
        ]
    elif lane is None or vector is None:
        raise ValueError(f"{mode.value} search needs the vector lane and a query vector")
    elif mode is SearchMode.HYBRID:
        ranked = hybrid_rank(backend, lane, query, vector, k, filters, texts, among)
    else:
        by_vector = _vector_top(lane, vector, k, filters, query, texts, among)
        ranked = [Ranked(mid, s, found, None) for mid, (s, found) in _ranked(by_vector)]
    return by_phrase(ranked, query, texts, mode)


def run_search(
    backend: Backend,
    text: str,
    vector: FloatArray | None,
    k: int,
    filters: Filters,
    *,
    mode: SearchMode = SearchMode.VECTOR,
    min_score: float | None = None,
    embedded_with: ModelInfo | None = None,
    languages: Sequence[str] = (),
) -> SearchResult:
    """Rank, apply ``min_score`` (a cosine; not for keyword mode), cut to ``k``, fetch the memories.

    A store without vectors finds nothing outside keyword mode. With ``embedded_with``, raises
    ModelChangedError if the store no longer uses that model (a re-embed was swapped in meanwhile).
    ``languages`` are those the query's model declares (see ``scripts``).
    """
    if min_score is not None and mode is SearchMode.KEYWORD:
        raise ValueError("min_score is a cosine; keyword search has none")
    with backend.snapshot():  # both lanes and the memories they name: one state of the store
        lane = None
        if mode is not SearchMode.KEYWORD:
            if backend.model is None:
                return SearchResult()
            lane = backend.vector_lane(embedded_with)
        ranked = rank(backend, lane, Query.of(text, languages), vector, k, filters, mode)
        below = []
        if min_score is not None:
            below = [r.vector.score for r in ranked if r.vector is not None and r.vector.score < min_score]
            ranked = [r for r in ranked if r.vector is not None and r.vector.score >= min_score]
        ranked = ranked[:k]
        memories = backend.get_many([r.id for r in ranked])
    return SearchResult(_hits(ranked, memories, text), len(below), max(below) if below else None)


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


def search_with_retry(
    backend: Backend,
    embedder: Callable[[], Embedder],
    reload_model: Callable[[], None],
    text: str,
    k: int,
    filters: Filters,
    mode: SearchMode,
    min_score: float | None,
) -> SearchResult:
    """Embed the query (not in keyword mode) and search; once more, with the model chosen again,
    if a re-embed swapped the store's model meanwhile, or the connection was lost midway. A store
    without vectors finds nothing outside keyword mode, without choosing or loading a model."""
    if mode is not SearchMode.KEYWORD and backend.model is None:
        return SearchResult()
    for attempt in range(2):
        vector, stamp, languages = None, None, ()
        notes: tuple[str, ...] = ()
        if mode is not SearchMode.KEYWORD:  # keyword search never loads the model
            model = embedder()
            embedded = model.embed_queries([text])
            vector, stamp, dropped = embedded.vectors[0], model.info, embedded.dropped_tokens[0]
            languages = getattr(model, "languages", ())
            notes = _query_notes(model.info.name, languages, text, dropped, mode)
        try:
            found = run_search(
                backend,
                text,
                vector,
                k,
                filters,
                mode=mode,
                min_score=min_score,
                embedded_with=stamp,
                languages=languages,
            )
            return replace(found, notes=notes)
        except ConnectionLostError:  # a read changes nothing: once more, on a new connection
            if attempt:
                raise
        except ModelChangedError:
            if attempt:
                raise
            reload_model()
    raise AssertionError("unreachable")
