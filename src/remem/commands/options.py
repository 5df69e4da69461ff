"""Command-line options shared by several remem commands, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        metavar="DIR",
        help="Store directory [default: $REMEM_HOME, else the user data dir].",
        show_default=False,
        file_okay=True,
        dir_okay=True,
    ),
]
UserOption = Annotated[
    str | None,
    typer.Option("--user", "-u", metavar="NAME", help="Whose memory it is; search/list: only theirs."),
]
ConversationOption = Annotated[
    str | None,
    typer.Option(
        "--conversation", "-c", metavar="ID", help="Conversation it belongs to; search/list: only that one."
    ),
]
TagOption = Annotated[
    list[str] | None,
    typer.Option("--tag", "-t", metavar="TAG", help="A tag, repeatable; search/list: all must be present."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object per line.")]
LimitOption = Annotated[
    int, typer.Option("--limit", "-k", min=1, metavar="N", help="Show at most N memories.")
]
RoleOption = Annotated[
    str | None,
    typer.Option(
        "--role", "-r", metavar="ROLE", help="Who said it (user, assistant…); search/list: only that."
    ),
]
MetaFilterOption = Annotated[
    list[str] | None,
    typer.Option("--meta", "-m", metavar="KEY=VALUE", help="Only memories with this metadata; repeatable."),
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="WHEN",
        help="Only memories created at/after WHEN: ISO date/time or 30m, 12h, 7d, 2w.",
    ),
]
UntilOption = Annotated[
    str | None,
    typer.Option(
        "--until", metavar="WHEN", help="Only memories created before WHEN (same forms as --since)."
    ),
]
