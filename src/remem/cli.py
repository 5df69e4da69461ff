"""The remem command line: the Typer app, its commands, and the mapping of errors to exit codes.

Exit codes (like grep): 0 success, 1 search/list found nothing or an id (a name) names no memory
(no token), 2 usage error or failure.
"""

import errno
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from remem import Embedder, __version__
from remem.commands import options as opt
from remem.commands import params
from remem.commands.common import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_NOTHING_FOUND,
    EXIT_OK,
    Invocation,
    invocation,
    invoked,
    option_names,
)
from remem.config import debug_enabled
from remem.errors import MemoryNotFoundError, RememError, TokenNotFoundError
from remem.inputs import unicode_only
from remem.render import visible

params.install()  # Typer's pydantic adapters only for values that need them (see params.py)
params.plain_arguments()  # help and usage lines without Python types

app = typer.Typer(
    name="remem",
    add_completion=True,
    invoke_without_command=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"remem {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="DIR|URL",
            help="Store directory or postgresql:// URL, for the command (before or after it).",
            show_default=False,
        ),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help=opt.QUIET_HELP),
    ] = False,
    model_dir: Annotated[
        Path | None,
        typer.Option(
            "--model-dir",
            metavar="DIR",
            help=opt.MODEL_DIR_HELP,
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            metavar="NAME",
            help="The model a new store starts with (`remem model list`) [$REMEM_MODEL].",
            show_default=False,
        ),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Local semantic memory: add short texts, search them by meaning. Offline; data stays here.

    The store is --store DIR, else $REMEM_HOME, else the user data directory.
    Exit codes: 0 success, 1 nothing found (or an id names no memory), 2 usage error or failure.
    """
    settings = invocation()
    settings.store = store
    settings.quiet = quiet
    settings.model_dir = model_dir
    settings.model = model
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())


#: The commands each module of ``remem.commands`` registers, in the order ``remem --help`` lists them.
COMMANDS: dict[str, tuple[str, ...]] = {
    "memories": ("add", "list"),
    "transfer": ("export", "import"),
    "search": ("search",),
    "recall": ("context", "show", "stats"),
    "changes": ("edit", "forget"),
    "maintenance": ("reindex", "compact", "doctor"),
    "models": ("model",),
    "mcp": ("mcp", "serve", "ui"),
    "tokens": ("token",),
}
_ORDER = [name for names in COMMANDS.values() for name in names]
_ROOT_FLAGS = {"-q", "--quiet", "-h", "--help", "--version"}
#: The root options that take a value.
_ROOT_OPTIONS = ("--store", "--model-dir", "--model")
#: Names people reach for from other tools, and the command that does it here.
_ALIASES = {
    "rm": "forget",
    "del": "forget",
    "delete": "forget",
    "remove": "forget",
    "ls": "list",
    "find": "search",
    "query": "search",
}
_registered: set[str] = set()


def register_commands(argv: Sequence[str]) -> None:
    """Put on ``app`` the commands of the module that the command named in ``argv`` belongs to, or
    every command when ``argv`` names none (help, completion, a mistyped name): Typer builds each
    registered command's parameters at every start, and importing and building all of them costs a
    short command such as ``list`` a tenth of its run."""
    name = _command_name(argv)
    modules = [module for module, names in COMMANDS.items() if name in names] or list(COMMANDS)
    for module in modules:
        if module not in _registered:
            importlib.import_module(f"remem.commands.{module}").register(app)
            _registered.add(module)
    _root_options_after(app)
    app.registered_commands.sort(key=_position)
    app.registered_groups.sort(key=_group_position)  # whichever group a run registered first


def _root_options_after(typer_app: typer.Typer) -> None:
    """Let every command of ``typer_app`` (and of its groups) take ``--quiet`` and ``--model-dir``
    after its name too (``--store`` is each command's own option, defaulting to the root's)."""
    for info in typer_app.registered_commands:
        info.callback = opt.with_root_options(info.callback)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _root_options_after(group.typer_instance)


def _position(info: typer.models.CommandInfo) -> int:
    name = info.name or getattr(info.callback, "__name__", "")
    return _ORDER.index(name) if name in _ORDER else len(_ORDER)


def _group_position(info: typer.models.TyperInfo) -> int:
    instance = info.typer_instance
    name = info.name or (instance.info.name if instance is not None else None)
    return _ORDER.index(name) if isinstance(name, str) and name in _ORDER else len(_ORDER)


def _command_name(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names after the root options, or None."""
    arguments = iter(argv)
    for argument in arguments:
        if argument in _ROOT_OPTIONS:
            next(arguments, None)
        elif argument not in _ROOT_FLAGS and not argument.startswith(tuple(f"{o}=" for o in _ROOT_OPTIONS)):
            return None if argument.startswith("-") else argument
    return None


def _fail(message: str) -> int:
    typer.echo(f"Error: {' '.join(message.split())}", err=True)
    return EXIT_FAILURE


def _describe(exc: Exception, options: dict[str, str], argv: Sequence[str] = ()) -> str:
    """One line for the user, remem's errors naming arguments by the command's ``options``
    (``option_names``); an unexpected exception is named, never its message or traceback (they may
    hold a memory's text)."""
    if isinstance(exc, typer.TyperException):  # usage errors: bad option, missing argument…
        # Click's "Got unexpected extra argument" is a plain usage error, not a bug: say so.
        message = exc.format_message().replace("Got unexpected extra", "Got an extra", 1)
        return message + _dash_hint(exc, argv)
    if isinstance(exc, RememError):
        return exc.phrased(options)
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    if debug_enabled(os.environ):
        raise exc
    return f"unexpected {type(exc).__name__} (set REMEM_DEBUG=1 for a traceback)"


def _dash_hint(exc: typer.TyperException, argv: Sequence[str]) -> str:
    """A hint for an argument taken for an option: a negative number (``edit 14 -1``) or, for a
    command that takes words, a text that starts with ``-`` (``search '-n prod'``) where no option
    of that name is near. It names the command that passes it: ``remem edit 14 -- -1``."""
    name, context = str(getattr(exc, "option_name", "") or ""), getattr(exc, "ctx", None)
    if name[:1] != "-" or context is None or getattr(exc, "possibilities", None):
        return ""
    arguments = [p for p in context.command.params if getattr(p, "param_type_name", "") == "argument"]
    number = name[1:].replace(".", "", 1).isdigit()
    if not arguments or not (number or any(p.nargs == -1 for p in arguments)):
        return ""
    at = next((i for i, a in enumerate(argv) if a == name or (a.startswith(name) and a[1] != "-")), None)
    if at is None:
        return ""
    import shlex  # noqa: PLC0415 - only for this hint

    words = context.command_path.split()[1:]
    before = _positionals(context.command, argv[_after(argv, words) : at])
    rest = argv[at + 1 :]
    tail = ["…"] if any(a.startswith("-") for a in rest) else [shlex.quote(a) for a in rest]
    command = " ".join([context.command_path, *map(shlex.quote, before), "--", shlex.quote(argv[at]), *tail])
    return visible(f" (to pass {shlex.quote(argv[at])} as an argument, put -- before it: {command})")


def _after(argv: Sequence[str], words: Sequence[str]) -> int:
    """The position in ``argv`` just after the command's name (``words``: ``token add``)."""
    position = 0
    for word in words:
        position = list(argv).index(word, position) + 1 if word in argv[position:] else position
    return position


def _positionals(command: Any, arguments: Sequence[str]) -> list[str]:
    """The positional arguments among ``arguments`` (options and their values left out)."""
    valued = {
        name
        for p in command.params
        if getattr(p, "param_type_name", "") == "option" and not getattr(p, "is_flag", False)
        for name in p.opts
    }
    found, skip = [], False
    for argument in arguments:
        if skip:
            skip = False
        elif argument.startswith("-"):
            skip = argument in valued
        else:
            found.append(argument)
    return found


def main(argv: list[str] | None = None, *, embedder: Embedder | None = None) -> int:
    """Run the CLI and return its exit code; errors become one ``Error: ...`` line on stderr.

    ``embedder`` replaces the model choice of every store the run opens (as ``remem.open``'s
    argument does): tests run the real commands with a fake model this way.
    """
    arguments = sys.argv[1:] if argv is None else argv
    name = _command_name(arguments)
    if name is not None and name not in _ORDER:
        return _fail(_unknown_command(name))
    register_commands(arguments)
    command = typer.main.get_command(app)
    settings = Invocation(embedder=embedder, options=option_names(_commands(command, name)))
    try:
        _check_arguments(arguments)
        with invoked(settings):
            result = command.main(args=argv, prog_name="remem", standalone_mode=False)
    except (SystemExit, BrokenPipeError, KeyboardInterrupt, typer.Abort) as exc:
        return _cut_short(exc)
    except (MemoryNotFoundError, TokenNotFoundError) as exc:  # like grep: what was asked for is not there
        _fail(str(exc))
        return EXIT_NOTHING_FOUND
    except Exception as exc:
        return _fail(_describe(exc, settings.options, arguments))
    if result == EXIT_INTERRUPTED:  # Typer turns Ctrl-C into this code without a word
        return _interrupted()
    return result if isinstance(result, int) else EXIT_OK


def _commands(root: Any, name: str | None) -> list[Any]:
    """The (Click) commands of a run: the CLI itself, the command ``name`` names and, for a group
    of commands, its commands."""
    named = getattr(root, "commands", {}).get(name) if name else None
    return [root] if named is None else [root, named, *getattr(named, "commands", {}).values()]


def _unknown_command(name: str) -> str:
    """One line for a command that does not exist, naming the nearest one (``rm`` → ``forget``)."""
    import difflib  # noqa: PLC0415 - only for a mistyped command

    nearest = _ALIASES.get(name.lower()) or next(
        iter(difflib.get_close_matches(name.lower(), _ORDER, 1)), None
    )
    hint = f" Did you mean 'remem {nearest}'?" if nearest else " See 'remem --help' for the commands."
    return f"No such command {name!r}.{hint}"


def _check_arguments(argv: list[str]) -> None:
    """Refuse an argument that is not valid UTF-8 (bytes the shell passed undecoded) before any
    command runs, so nothing is created or changed for it."""
    for position, argument in enumerate(argv, start=1):
        unicode_only(argument, f"argument {position}")


def _cut_short(exc: BaseException) -> int:
    """The exit code of a run cut short: the reader of stdout went away (`remem export | head -1`;
    Typer itself exits 1 on EPIPE, hence SystemExit) → 0; Ctrl-C → 130 with ``Interrupted.``.
    Any other SystemExit goes on."""
    if isinstance(exc, (KeyboardInterrupt, typer.Abort)):
        return _interrupted()
    if isinstance(exc, SystemExit) and not _reader_went_away(exc):
        raise exc
    return _quiet_broken_pipe()


def _reader_went_away(exc: SystemExit) -> bool:
    """True when Typer exited because stdout's reader closed the pipe (EPIPE)."""
    cause = exc.__context__
    return isinstance(cause, OSError) and cause.errno == errno.EPIPE


def _quiet_broken_pipe() -> int:
    """A closed pipe is the reader's choice (`remem export | head -1`): exit 0, and send what is
    still buffered for stdout nowhere, so Python does not complain about it at exit."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


def _interrupted() -> int:
    typer.echo("Interrupted.", err=True)
    return EXIT_INTERRUPTED
