"""What the commands share: the invocation's settings, opening the store, printing results.

Commands are a thin front-end: they parse, call the ``remem`` API, render, and leave the mapping of
errors to exit codes to ``remem.cli``.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal, TypeVar

import typer

import remem
from remem import render
from remem.errors import StoreNotFoundError, phrase

EXIT_OK, EXIT_NOTHING_FOUND, EXIT_FAILURE, EXIT_INTERRUPTED = 0, 1, 2, 130
#: The file in the model cache directory that lists the tips already said on this machine.
TIPS_SAID = "tips-said"
T = TypeVar("T")
#: The options whose parameter is not named as the library names the argument it gives.
_ARGUMENT_OF_OPTION = {
    "tag": "tags",
    "origin": "source",  # remem import --from
    "expires": "expires_at",
    "max_chars": "max_text_chars",
    "hnsw_m": "hnsw.m",
    "ef_construction": "hnsw.ef_construction",
    "ef_search": "hnsw.ef_search",
}


@dataclass
class Invocation:
    """One run of the CLI: its global options, an embedder a caller injected (tests), and what its
    command calls the library's arguments (``option_names``)."""

    store: str | None = None  # --store before the command; the command's own --store wins
    quiet: bool = False
    model_dir: Path | None = None
    model: str | None = None  # the model a new store starts with (--model)
    embedder: remem.Embedder | None = None
    options: dict[str, str] = field(default_factory=dict)


_CURRENT: ContextVar[Invocation | None] = ContextVar("remem_invocation", default=None)


@contextlib.contextmanager
def invoked(settings: Invocation) -> Iterator[Invocation]:
    """Make ``settings`` the current invocation's for the duration of one CLI run."""
    token = _CURRENT.set(settings)
    try:
        yield settings
    finally:
        _CURRENT.reset(token)


def invocation() -> Invocation:
    """The settings of the running command (fresh defaults outside a CLI run)."""
    current = _CURRENT.get()
    return current if current is not None else Invocation()


def stdin() -> BinaryIO:
    """Standard input as bytes (decoding is validated by remem.inputs)."""
    return typer.get_binary_stream("stdin")


def terminal_width() -> int | None:
    """Columns of the terminal stdout is on, or None when stdout is not a terminal."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def print_results(
    items: Sequence[T],
    json_out: bool,
    to_record: Callable[[T], dict[str, Any]],
    to_table: Callable[[Sequence[T], int | None], str],
    wide: bool = False,
) -> None:
    """NDJSON with --json, else a table fitted to the terminal (``wide``: whole, as in a pipe)."""
    if json_out:
        for item in items:
            typer.echo(render.json_line(to_record(item)))
    else:
        typer.echo(to_table(items, None if wide else terminal_width()))


def option_names(commands: Iterable[Any]) -> dict[str, str]:
    """What the Typer (Click) ``commands`` call each library argument they have an option for, read
    from their parameters: ``{"min_score": "--min-score", "tags": "--tag", …}``."""
    names: dict[str, str] = {}
    for command in commands:
        for param in command.params:
            flags = [flag for flag in param.opts if flag.startswith("--")]
            if isinstance(param, typer.core.TyperOption) and param.name and flags:
                names[_ARGUMENT_OF_OPTION.get(param.name, param.name)] = flags[0]
    return names


def in_own_words(message: str, mentions: Sequence[str]) -> str:
    """``message`` (of a remem error that names the arguments ``mentions``) with those arguments
    called by the running command's options (``max_text_chars``: ``--max-chars``)."""
    return phrase(message, mentions, invocation().options)


def selecting_none(filters: remem.Filters) -> str:
    """What to say when ``filters`` select no memory, naming them as the options that gave them:
    ``the filter --tag nosuchtag selects no memory``; without any, that the store holds none."""
    named = [
        (f"--{name}", getattr(filters, name)) for name in ("user", "conversation", "role", "since", "until")
    ]
    given = [
        *(f"{flag} {render.visible(value)}" for flag, value in named if value is not None),
        *(f"--tag {render.visible(tag)}" for tag in filters.tags),
        *(f"--meta {render.visible(key)}={render.visible(value)}" for key, value in filters.meta),
        *(["--shared"] if filters.shared else []),
    ]
    if not given:
        return "the store holds no memory yet"
    many = len(given) > 1
    return f"the filter{'s' if many else ''} {' '.join(given)} select{'' if many else 's'} no memory"


def note(message: str) -> None:
    """One line for the human on stderr (a summary, a hint); silent with --quiet. A ``remem.Tip``
    (the same for every store) is said once per machine (``first_time``)."""
    if not invocation().quiet and (not isinstance(message, remem.Tip) or first_time(message)):
        typer.echo(message, err=True)


def first_time(tip: remem.Tip) -> bool:
    """True unless ``tip`` was said before on this machine: its key is then in the file
    ``TIPS_SAID`` in the model cache directory (``$REMEM_MODELS``), where it is added now. A
    directory that cannot be read or written only means the tip is said again."""
    try:
        said = model_catalog().models_dir / TIPS_SAID
        if said.is_file() and tip.key in said.read_text(encoding="utf-8").split():
            return False
        said.parent.mkdir(parents=True, exist_ok=True)
        with said.open("a", encoding="utf-8") as file:  # one short append: two writers cannot mix it
            file.write(f"{tip.key}\n")
    except (OSError, UnicodeError):
        pass
    return True


def warn(message: str) -> None:
    """One ``Warning: ...`` line on stderr; silent with --quiet."""
    note(f"Warning: {message}")


def model_catalog() -> remem.ModelCatalog:
    """The models of this installation, with --model-dir when given."""
    return remem.model_catalog(model_dir=invocation().model_dir, model=invocation().model)


#: Who the CLI's writes name (``Memory.written_by``): the front-end, not the OS user. One person's
#: machine knows its user already, a shared store's memories would carry account names, and a token's
#: writes name the token; ``remem token add`` refuses the name, so no token passes for the CLI.
CLI_WRITER = "cli"


@contextlib.contextmanager
def open_memories(
    option: str | None, *, create: bool, if_missing: Literal["say", "silent", "fail"] = "say"
) -> Iterator[remem.Memories | None]:
    """The store's Memories; its notes and self-repairs are printed when the block ends.

    A command that does not create the store gets None when there is none, after ``No remem
    store at PATH`` on stderr (``if_missing="say"``) or silently (``"silent"``: the store is
    optional to it); with ``"fail"`` the StoreNotFoundError propagates (an error, exit 2). What it
    writes names ``CLI_WRITER``.
    """
    settings = invocation()
    try:
        memories = remem.open(
            option,
            create=create,
            model_dir=settings.model_dir,
            model=settings.model,
            embedder=settings.embedder,
        )
    except StoreNotFoundError as exc:
        message = missing_store(exc, option)
        if if_missing == "fail":
            raise StoreNotFoundError(message) from None
        if if_missing == "say":
            note(message[:1].upper() + message[1:])
        yield None
        return
    memories.writer = CLI_WRITER
    try:
        yield memories
    finally:
        for message in memories.notes:
            note(message)
        for warning in memories.warnings:
            warn(warning)
        memories.close()


def missing_store(
    exc: StoreNotFoundError, option: str | None, command: str = "add", rest: str = "TEXT"
) -> str:
    """``no remem store at PATH — `remem add TEXT` creates it``: the error, and the command that
    creates the store ``--store option`` names (``remem COMMAND [--store …] REST``)."""
    return f"{exc} — `{_creating_command(option, command, rest)}` creates it"


def _creating_command(option: str | None, command: str = "add", rest: str = "TEXT") -> str:
    """The command that creates the store ``--store option`` names (the default one without it); a
    URL is not repeated (it may hold a password)."""
    import shlex  # noqa: PLC0415

    if option is None:
        return f"remem {command} {rest}"
    return f"remem {command} --store {'URL' if '://' in option else shlex.quote(option)} {rest}"


def shows_progress() -> bool:
    """Whether ``progress_bar`` draws a bar: stderr is a terminal and --quiet was not given."""
    return not invocation().quiet and sys.stderr.isatty()


@contextlib.contextmanager
def progress_bar(length: int, label: str) -> Iterator[Callable[[int, int], None]]:
    """A ``progress(done, total)`` callback drawing a bar on stderr when it is a terminal (never
    with --quiet); a no-op otherwise."""
    if not shows_progress():
        yield lambda done, total: None
        return
    with typer.progressbar(length=length, label=label, file=sys.stderr) as bar:

        def update(done: int, total: int) -> None:
            bar.length = total
            bar.update(done - bar.pos)

        yield update
