"""A search from the core's entry to its hits: read the query once (``query``), gather its pool
from the back-end in one call inside one snapshot (``pool``), rank it with a pure function (``fuse``), cut to
``k``, fetch the memories, and say what a person should know (notes, and why nothing was found).

Word order (``phrases``): in hybrid and keyword modes a memory holding the whole query as a phrase
outranks the others. Quoted phrases are required in every mode: a filter over the whole store, so the
lanes rank only the memories holding them. Time words are evidence: memories from the window they
name gain (``fuse.TIME_WEIGHT``), none is left out; only since/until filter by time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from remem.core.search import calibration, fuse, snippets, why
from remem.core.search import pool as pooling
from remem.core.search import query as reading
from remem.core.search.pool import Asked
from remem.errors import ConnectionLostError, ModelChangedError
from remem.reports import Nothing, SearchResult
from remem.types import Filters, ModelInfo, SearchMode

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.base import Backend
    from remem.core.search.pool import QueryEmbedder
    from remem.embedders.base import Embedder, Embeddings


def unembedded(backend: Backend) -> SearchResult:
    """What a search outside keyword mode finds in a store without vectors: nothing, because the
    store holds no memory at all, or because none has a vector yet."""
    return SearchResult(nothing=Nothing("unembedded" if backend.newest(Filters(), 1) else "store"))


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
    now: datetime | None = None,
) -> SearchResult:
    """Rank, put each ranked memory's score on the calibrated scale (``calibration``), apply
    ``min_score`` (a relevance in [0, 1], in every mode), cut to ``k``, fetch the memories.

    A store without vectors finds nothing outside keyword mode. With ``embedded_with``, raises
    ModelChangedError if the store no longer uses that model (a re-embed was swapped in meanwhile).
    ``embed`` embeds the query (``text``, or hybrid search's text without the speakers it names) as
    ``embedded_with``, or is the query's vector (then always the whole query's); ``languages`` are
    those the query's model declares (see ``scripts``); the keyword lane counts the statistics of
    ``scope``'s memories (which hold every filtered one), or the whole store's. With ``now``
    (timezone-aware), the query's time words are read in its zone: memories from then rank higher.
    """
    query = reading.read(text, languages, scope, now)
    with backend.snapshot():  # the pool and the memories it names: one state of the store
        # once in this search (a local store reads its stamp's row each time); keyword mode needs
        # none: BM25 and its calibration are every model's
        stored = None if mode is SearchMode.KEYWORD else backend.model
        if mode is not SearchMode.KEYWORD and stored is None:
            return unembedded(backend)
        embedding = embed if embed is None or callable(embed) else _always(embed)
        asked = Asked(backend, embedding, filters, k, embedded_with)
        pool = pooling.gather(asked, query, mode)
        ranked = fuse.rank(pool, mode)
        model = stored.name if stored else None
        scored, below = calibration.shown(ranked, pool, mode, model, k, min_score)
        memories = backend.get_many([r.id for r in ranked[: len(scored)]])
        hits = snippets.hits(ranked, scored, memories, query)
        said = why.said(asked, query, mode, pool, bool(ranked), hits, languages)
    best_below = max(below) if below else None
    return SearchResult(hits, len(below), best_below, said.notes, said.dates, said.nothing)


def _always(vector: FloatArray) -> QueryEmbedder:
    """An embedder that gives ``vector`` for any text."""
    return lambda _text: vector


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


@dataclass(frozen=True)
class Wanted:
    """A search as its caller asked it: the query, how many hits, the filters, the mode, the
    smallest relevance, the statistics' scope, and the moment its time words are read at (None: not
    read)."""

    text: str
    k: int
    filters: Filters
    mode: SearchMode
    min_score: float | None = None
    scope: Filters | None = None
    now: datetime | None = None


def search_with_retry(
    backend: Backend, embedder: Callable[[], Embedder], reload_model: Callable[[], None], wanted: Wanted
) -> SearchResult:
    """Embed the query (not in keyword mode) and search (``run_search``); once more, with the model
    chosen again, if a re-embed swapped the store's model meanwhile, or the connection was lost
    midway. A store without vectors finds nothing outside keyword mode, without choosing or loading
    a model."""
    for attempt in range(2):
        try:
            with backend.snapshot():  # the model read in the search's state (PostgreSQL: no round trip)
                found = _search(backend, embedder, wanted)
        except ConnectionLostError:  # a read changes nothing: once more, on a new connection
            if attempt:
                raise
        except ModelChangedError:
            if attempt:
                raise
            reload_model()
        else:
            return found
    raise AssertionError("unreachable")


def _search(backend: Backend, embedder: Callable[[], Embedder], wanted: Wanted) -> SearchResult:
    """One attempt of ``search_with_retry``."""
    mode = wanted.mode
    if mode is not SearchMode.KEYWORD and backend.model is None:
        return unembedded(backend)
    embed = None if mode is SearchMode.KEYWORD else QueryEmbedding(embedder())  # keyword: no model
    found = run_search(
        backend,
        wanted.text,
        embed,
        wanted.k,
        wanted.filters,
        mode=mode,
        min_score=wanted.min_score,
        embedded_with=None if embed is None else embed.model.info,
        languages=() if embed is None else embed.languages,
        scope=wanted.scope,
        now=wanted.now,
    )
    if embed is None:
        return found
    dropped = embed.last.dropped_tokens[0] if embed.last else 0
    if not dropped:
        return found
    cut = f"The query's last {dropped} tokens were beyond the model window and were not used."
    return replace(found, notes=(cut, *found.notes))
