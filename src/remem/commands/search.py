"""The search command."""

from typing import Annotated

import typer

import remem
from remem import render
from remem.commands import options as opt
from remem.commands.common import (
    EXIT_NOTHING_FOUND,
    note,
    open_memories,
    print_results,
    selecting_none,
    stdin,
)
from remem.inputs import read_text

DEFAULT_SEARCH_LIMIT = 5
#: How a date reading's note says to turn it off, in this front-end's words.
NO_DATES = "--no-dates ignores them"


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
        remem.SearchMode,
        typer.Option("--mode", help="vector: meaning; keyword: exact words (BM25); hybrid: both, fused."),
    ] = remem.SearchMode.HYBRID,
    min_score: Annotated[
        float | None,
        typer.Option("--min-score", metavar="SCORE", help="Leave out hits below this relevance (0..1)."),
    ] = None,
    filters: remem.Filters = opt.NO_FILTERS,
    no_dates: opt.NoDatesOption = False,
    wide: opt.WideOption = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain", help="Say why each hit ranked where it did: each lane's rank and score, every lift."
        ),
    ] = False,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Find memories by meaning and by exact words, best first.

    SCORE is a calibrated relevance, 0..1, on one scale in every mode (about the share of hits
    scoring so that are relevant; ranking order is the mode's own). COSINE is the raw cosine
    (hybrid and vector; --json shows each lane's rank and raw score).
    Time words ("from Tuesday", "last week", "yesterday") rank memories from that window of local
    time higher, hiding none (said on stderr; in --json as "dates" on each hit); --since/--until
    filter and win, --no-dates turns it off.
    --explain adds why (in --json as "explain" on each hit). Exit 1 if nothing matched, saying why.
    """
    text = read_text(query, stdin(), what="query")
    with open_memories(store, create=False) as memories:
        if memories is None:
            raise typer.Exit(EXIT_NOTHING_FOUND)
        result = memories.search(
            text, k=limit, mode=mode, min_score=min_score, where=filters, dates=not no_dates
        )
    for message in result.notes_saying(NO_DATES):
        note(message)
    if not result:
        _say_why_empty(result, min_score, filters)
        raise typer.Exit(EXIT_NOTHING_FOUND)
    cosines = mode is not remem.SearchMode.KEYWORD
    dated = {} if result.dates is None else {"dates": result.dates.record()}
    print_results(
        list(result),
        json_out,
        lambda hit: {
            **render.hit_record(hit),
            **dated,
            **({"explain": render.explain_record(hit)} if explain else {}),
        },
        lambda hits, width: (
            render.hits_table(hits, width, cosines)
            + ("".join(f"\n{render.explain_line(hit)}" for hit in hits) if explain else "")
        ),
        wide,
    )


def _say_why_empty(result: remem.SearchResult, min_score: float | None, filters: remem.Filters) -> None:
    """One line on stderr saying why a search found nothing."""
    if result.below_min_score and result.best_below is not None:
        note(
            f"No results: {result.below_min_score} below --min-score {min_score} "
            f"(best score seen {result.best_below:.4f})."
        )
    elif result.nothing is not None and result.nothing.kind == "filters":
        note(selecting_none(filters))
    elif result.nothing is not None:
        note(render.visible(result.nothing.line()))
