"""The search command."""

from typing import Annotated

import typer

import remem
from remem import render
from remem.commands import options as opt
from remem.commands.common import EXIT_NOTHING_FOUND, note, open_memories, print_results, stdin
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
        typer.Option("--min-score", metavar="COSINE", help="Leave out hits below this raw cosine (-1..1)."),
    ] = None,
    filters: remem.Filters = opt.NO_FILTERS,
    no_dates: opt.NoDatesOption = False,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Find memories by meaning and by exact words, best first.

    SCORE is the mode's score: raw cosine (vector, -1..1), BM25 (keyword, higher is better), or
    the fused z-score of the two lanes (hybrid, shown with each hit's COSINE; --json shows
    each lane's rank and score).
    Time words ("from Tuesday", "last week", "yesterday") rank memories from that window of local
    time higher, hiding none (said on stderr; in --json as "dates" on each hit); --since/--until
    filter and win, --no-dates turns it off.
    Exit 1 if nothing matched.
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
        if result.below_min_score and result.best_below is not None:
            note(
                f"No results: {result.below_min_score} below --min-score {min_score} "
                f"(best cosine seen {result.best_below:.4f})."
            )
        raise typer.Exit(EXIT_NOTHING_FOUND)
    hybrid = mode is remem.SearchMode.HYBRID
    dated = {} if result.dates is None else {"dates": result.dates.record()}
    print_results(
        list(result),
        json_out,
        lambda hit: {**render.hit_record(hit), **dated},
        lambda hits, width: render.hits_table(hits, width, hybrid),
    )
