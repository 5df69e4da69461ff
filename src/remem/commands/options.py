"""Command-line options shared by several remem commands, declared once (the filters as one decorator)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import typer

from remem import Filters
from remem.commands.common import invocation
from remem.inputs import MAX_TEXT_CHARS_CEILING, parse_meta

QUIET_HELP = "No notes or warnings on stderr (errors still); before or after the command."
MODEL_DIR_HELP = "Your own model: model.onnx, tokenizer.json, remem-model.json [$REMEM_MODEL_DIR]."
#: The root options every command takes after its name too, and how each sets the invocation's value.
_ROOT_OPTIONS_AFTER: dict[str, Any] = {
    "quiet": Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)],
    "model_dir": Annotated[
        Path | None, typer.Option("--model-dir", metavar="DIR", help=MODEL_DIR_HELP, show_default=False)
    ],
}


def _store_or_root(value: str | None) -> str | None:
    """The command's --store, else the one given before the command (``remem --store X list``)."""
    return value if value is not None else invocation().store


StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="DIR|URL",
        help="Store directory, or postgresql://user@host/db[?schema=NAME] "
        "[default: $REMEM_HOME, else the user data dir]; before or after the command.",
        show_default=False,
        callback=_store_or_root,
    ),
]


def _setting_and_filtering(kind: Any, *names: str, metavar: str, sets: str, selects: str) -> tuple[Any, Any]:
    """The option ``names`` (of type ``kind``) as a command that stores a memory takes it (help
    ``sets``) and as a filter (help ``selects``): one declaration, each command's own words."""
    return tuple(  # type: ignore[return-value]
        Annotated[kind, typer.Option(*names, metavar=metavar, help=words)] for words in (sets, selects)
    )


UserOption, _UserFilter = _setting_and_filtering(
    str | None,
    "--user",
    "-u",
    metavar="NAME",
    sets="Whose memory it is.",
    selects="Only this user's memories.",
)
ConversationOption, _ConversationFilter = _setting_and_filtering(
    str | None,
    "--conversation",
    "-c",
    metavar="ID",
    sets="The conversation it belongs to.",
    selects="Only this conversation's memories.",
)
TagOption, _TagFilter = _setting_and_filtering(
    list[str] | None,
    "--tag",
    "-t",
    metavar="TAG",
    sets="A tag; repeatable.",
    selects="Only memories with this tag; repeatable: all must be present.",
)
RoleOption, _RoleFilter = _setting_and_filtering(
    str | None,
    "--role",
    "-r",
    metavar="ROLE",
    sets="Who said it (user, assistant…).",
    selects="Only memories of this role (user, assistant…).",
)
SharedOption = Annotated[
    bool,
    typer.Option("--shared", help="With --user: also the memories that have no user (the team's)."),
]
#: For commands whose arguments are only ids: ``show -1`` takes -1 as an id (naming no memory) as
#: ``show -- -1`` does; a mistyped option is then an id that is not a number, still an error.
IDS_MAY_BE_NEGATIVE = {"ignore_unknown_options": True}
MaxCharsOption = Annotated[
    int,
    typer.Option(
        "--max-chars",
        metavar="N",
        min=1,
        max=MAX_TEXT_CHARS_CEILING,
        help=f"Refuse a memory text longer than N characters (at most {MAX_TEXT_CHARS_CEILING:,}).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON object per line.")]
WideOption = Annotated[
    bool,
    typer.Option("--wide", "-w", help="Whole texts, one line each, never cut to the terminal's width."),
]
NoDatesOption = Annotated[
    bool,
    typer.Option(
        "--no-dates", help='Do not read time words ("from Tuesday"): memories from then gain nothing.'
    ),
]
LimitOption = Annotated[
    int, typer.Option("--limit", "-k", min=1, metavar="N", help="Show at most N memories.")
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
        help="Only memories created at/after WHEN: ISO date/time (UTC without an offset), an age (30m, "
        "12h, 7d) or time words (yesterday, monday, last week: the local start of that day or week).",
    ),
]
UntilOption = Annotated[
    str | None,
    typer.Option(
        "--until", metavar="WHEN", help="Only memories created before WHEN (same forms as --since)."
    ),
]
IncludeSupersededOption = Annotated[
    bool,
    typer.Option("--include-superseded", help="Also the memories a newer one superseded (add --supersedes)."),
]
IncludeExpiredOption = Annotated[
    bool, typer.Option("--include-expired", help="Also the memories whose --expires time has passed.")
]

#: What a command with filter options receives until the decorator fills in the real ones.
NO_FILTERS = Filters()

#: The filter options, in the order they are listed, with their defaults (none: no filtering).
FILTER_OPTIONS: dict[str, Any] = {
    "user": _UserFilter,
    "shared": SharedOption,
    "conversation": _ConversationFilter,
    "role": _RoleFilter,
    "tag": _TagFilter,
    "meta": MetaFilterOption,
    "since": SinceOption,
    "until": UntilOption,
    "include_superseded": IncludeSupersededOption,
    "include_expired": IncludeExpiredOption,
}
#: The filter options that are flags (None when not given, as every filter option is).
_FLAGS = ("shared", "include_superseded", "include_expired")
#: The filters that select memories (forget's: it finds superseded and expired ones anyway).
SELECTING = tuple(name for name in FILTER_OPTIONS if not name.startswith("include_"))
#: The filters of what is shown of a conversation (``context``).
CONVERSATION = ("user", "shared", "conversation", "role", "tag", "include_superseded", "include_expired")

Command = TypeVar("Command", bound=Callable[..., Any])


def with_filters(*names: str) -> Callable[[Command], Command]:
    """Give a command the shared filter options (all of them, or the ones named), declared once.

    The command takes one ``filters: Filters`` parameter; the options appear in its place in the
    help, and their values arrive validated as that one Filters (see ``Filters.of``).
    """
    chosen = names or tuple(FILTER_OPTIONS)

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        options = [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=FILTER_OPTIONS[name]
            )
            for name in chosen
        ]
        parameters: list[inspect.Parameter] = []
        for parameter in signature.parameters.values():
            parameters.extend(
                options
                if parameter.name == "filters"
                else [parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY)]
            )

        @functools.wraps(command)
        def with_options(**kwargs: Any) -> Any:
            values = {name: kwargs.pop(name) for name in chosen}
            values["tags"] = values.pop("tag", None)
            values["meta"] = parse_meta(values.get("meta"))
            values.update({name: bool(values.get(name)) for name in _FLAGS if name in chosen})
            kwargs["filters"] = Filters.of(**values)
            return command(**kwargs)

        with_options.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        return cast(Command, with_options)

    return decorate


def with_root_options(command: Command | None) -> Command | None:
    """``command`` taking the root options ``--quiet`` and ``--model-dir`` after the command's name
    too (``remem list -q``), declared once here; given there, they win over the root's. Wrapping
    twice is wrapping once (``remem.cli`` wraps what each start registers)."""
    if command is None or getattr(command, "_root_options", False):
        return command
    signature = inspect.signature(command, eval_str=True)
    taken = [name for name in _ROOT_OPTIONS_AFTER if name not in signature.parameters]
    added = [
        inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_ROOT_OPTIONS_AFTER[name]
        )
        for name in taken
    ]

    @functools.wraps(command)
    def with_options(*args: Any, **kwargs: Any) -> Any:
        settings = invocation()
        for name in taken:
            value = kwargs.pop(name)
            if value:
                setattr(settings, name, value)
        return command(*args, **kwargs)

    parameters = [*signature.parameters.values()]
    with_options.__signature__ = signature.replace(parameters=[*parameters, *added])  # type: ignore[attr-defined]
    with_options._root_options = True  # type: ignore[attr-defined]
    return cast(Command, with_options)
