"""The search command."""

from __future__ import annotations

from typing import Annotated

import typer

from remem import render
from remem.commands import options as opt
from remem.commands.common import (
    EXIT_NOTHING_FOUND,
    note,
    open_store,
    print_results,
    stdin,
)
from remem.commands.modelsel import embedder_for
from remem.config import DEFAULT_SEARCH_LIMIT
from remem.errors import InvalidInputError
from remem.index import Filters, MemoryStore, SearchMode
from remem.index.search import SearchOutcome
from remem.index.store import ModelChangedError
from remem.inputs import check_min_score, read_text

#: Chosen by measurement on SciFact and the memory-shaped set in tests/data (see README).
DEFAULT_SEARCH_MODE = SearchMode.HYBRID


def register(app: typer.Typer) -> None:
    """Add this command to the app."""
    app.command()(search)


@opt.with_filters()
def search(
    query: Annotated[
        list[str] | None,
        typer.Argument(metavar="QUERY", help="What to look for (words are joined); - reads stdin."),
    ] = None,
    limit: opt.LimitOption = DEFAULT_SEARCH_LIMIT,
    mode: Annotated[
        SearchMode,
        typer.Option("--mode", help="vector: meaning; keyword: exact words (BM25); hybrid: both, fused."),
    ] = DEFAULT_SEARCH_MODE,
    min_score: Annotated[
        float | None,
        typer.Option("--min-score", metavar="COSINE", help="Leave out hits below this raw cosine (-1..1)."),
    ] = None,
    filters: Filters = opt.NO_FILTERS,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Find memories by meaning and by exact words, best first.

    SCORE is the mode's score: raw cosine (vector, -1..1), BM25 (keyword, higher is better), or
    the fused Reciprocal Rank Fusion score (hybrid, shown with each hit's COSINE; --json shows
    each lane's rank and score).
    Exit 1 if nothing matched.
    """
    text = read_text(query, stdin(), what="query")
    threshold = check_min_score(min_score)
    if threshold is not None and mode is SearchMode.KEYWORD:
        raise InvalidInputError("--min-score is a cosine; use it with --mode vector or hybrid")
    with open_store(store, create=False) as opened:
        if opened is None or opened.model is None:
            raise typer.Exit(EXIT_NOTHING_FOUND)
        outcome = search_once(opened, text, limit, filters, mode, threshold)
    if not outcome.hits:
        _explain_empty(outcome, threshold)
        raise typer.Exit(EXIT_NOTHING_FOUND)
    hybrid = mode is SearchMode.HYBRID
    print_results(
        outcome.hits, json_out, render.hit_record, lambda hits, width: render.hits_table(hits, width, hybrid)
    )


def search_once(
    store: MemoryStore, text: str, limit: int, filters: Filters, mode: SearchMode, threshold: float | None
) -> SearchOutcome:
    """Embed the query (not in keyword mode) and search; once more if a re-embed swapped models.

    A store that holds no vectors yet finds nothing without loading (or choosing) a model.
    """
    if mode is not SearchMode.KEYWORD and store.model is None:
        return SearchOutcome([], 0, None)
    for attempt in range(2):
        vector, stamp = None, None
        if mode is not SearchMode.KEYWORD:  # keyword search never loads the model
            embedder, stamp = embedder_for(store)
            vector = embedder.embed_queries([text]).vectors[0]
        try:
            return store.search(
                text, vector, limit, filters, mode=mode, min_score=threshold, embedded_with=stamp
            )
        except ModelChangedError:
            if attempt:
                raise
    raise AssertionError("unreachable")


def _explain_empty(outcome: SearchOutcome, threshold: float | None) -> None:
    """Say on stderr when --min-score is what emptied the result."""
    if outcome.below_min_score and outcome.best_below is not None:
        note(
            f"No results: {outcome.below_min_score} below --min-score {threshold} "
            f"(best cosine seen {outcome.best_below:.4f})."
        )
