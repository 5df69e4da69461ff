"""The remem command line: parses arguments, joins embedder and store, formats output, maps errors.

Exit codes (like grep): 0 success, 1 search/list found nothing, 2 usage error or failure.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, TypeVar

import typer

from remem import __version__, render
from remem.config import DEFAULT_LIST_LIMIT, DEFAULT_SEARCH_LIMIT, debug_enabled, resolve_store_dir
from remem.errors import ModelMismatchError, RememError
from remem.index import AddResult, Filters, MemoryStore, ModelStamp, NewMemory, StoreNotFoundError
from remem.inputs import check_min_score, clean_name, clean_tags, parse_meta, read_text
from remem.options import ConversationOption, JsonOption, LimitOption, StoreOption, TagOption, UserOption

if TYPE_CHECKING:
    from remem.embedders.runner import OnnxEmbedder

EXIT_OK, EXIT_NOTHING_FOUND, EXIT_FAILURE = 0, 1, 2
T = TypeVar("T")

app = typer.Typer(
    name="remem",
    add_completion=False,
    invoke_without_command=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _filters(user: str | None, conversation: str | None, tags: list[str] | None) -> Filters:
    return Filters(
        user=clean_name(user, "--user"),
        conversation=clean_name(conversation, "--conversation"),
        tags=clean_tags(tags),
    )


def _stdin() -> BinaryIO:
    return typer.get_binary_stream("stdin")


def _terminal_width() -> int | None:
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def _print_results(
    items: Sequence[T],
    json_out: bool,
    to_record: Callable[[T], dict[str, Any]],
    to_table: Callable[[Sequence[T], int | None], str],
) -> None:
    """NDJSON with --json, else a table fitted to the terminal."""
    if json_out:
        for item in items:
            typer.echo(render.json_line(to_record(item)))
    else:
        typer.echo(to_table(items, _terminal_width()))


def _warn(message: str) -> None:
    typer.echo(f"Warning: {message}", err=True)


def _store_dir(option: Path | None) -> Path:
    return resolve_store_dir(option, os.environ)


@contextlib.contextmanager
def _opened(option: Path | None, *, create: bool) -> Iterator[MemoryStore | None]:
    """The store, or None when a read-only command finds none; its self-repairs become warnings."""
    try:
        store = MemoryStore.open(_store_dir(option), create=create)
    except StoreNotFoundError:
        yield None
        return
    try:
        yield store
    finally:
        for warning in store.warnings:
            _warn(warning)
        store.close()


def _embedder_for(store: MemoryStore) -> tuple[OnnxEmbedder, ModelStamp]:
    """The embedder for this store's model (the default model for a new store), checked against it."""
    from remem.embedders.registry import DEFAULT_MODEL, get_spec, known_models, locate  # noqa: PLC0415
    from remem.embedders.runner import OnnxEmbedder  # noqa: PLC0415
    from remem.embedders.spec import verify_model_files  # noqa: PLC0415

    recorded = store.model
    if recorded is not None and recorded.name not in {spec.name for spec in known_models()}:
        raise ModelMismatchError(
            f"the store at {store.directory} holds vectors of model {recorded.name} ({recorded.dim}-d), "
            f"which this remem cannot run (it has: {', '.join(s.name for s in known_models())})"
        )
    spec = DEFAULT_MODEL if recorded is None else get_spec(recorded.name)
    files = locate(spec)
    # Hash the files the first time a store uses them; afterwards the recorded sha256 is compared.
    sha = spec.model_sha256 if recorded is not None else verify_model_files(spec, files)
    stamp = ModelStamp(name=spec.name, dim=spec.dim, pooling=spec.pooling.value, sha256=sha)
    store.check_model(stamp)
    return OnnxEmbedder(spec, files), stamp


def _version(value: bool) -> None:
    if value:
        typer.echo(f"remem {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """Local semantic memory: add short texts, search them by meaning. Offline; data stays here.

    The store is --store DIR, else $REMEM_HOME, else the user data directory.
    Exit codes: 0 success, 1 search/list found nothing, 2 usage error or failure.
    """
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())


@app.command()
def add(
    text: Annotated[
        list[str] | None,
        typer.Argument(metavar="TEXT", help="The memory (words are joined); - reads stdin."),
    ] = None,
    tag: TagOption = None,
    user: UserOption = None,
    conversation: ConversationOption = None,
    role: Annotated[
        str | None, typer.Option("--role", "-r", metavar="ROLE", help="Who said it: user, assistant…")
    ] = None,
    meta: Annotated[
        list[str] | None,
        typer.Option("--meta", "-m", metavar="KEY=VALUE", help="key=value metadata; repeatable."),
    ] = None,
    json_out: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Store a memory and print its id.

    The same text in the same user/conversation is stored once: adding it again prints the
    existing id (and says so on stderr) without loading the model.
    """
    memory = NewMemory(
        text=read_text(text, _stdin()),
        user=clean_name(user, "--user"),
        conversation=clean_name(conversation, "--conversation"),
        role=clean_name(role, "--role"),
        tags=clean_tags(tag),
        meta=parse_meta(meta),
    )
    with _opened(store, create=True) as opened:
        assert opened is not None
        result = _add_one(opened, memory)
    if json_out:
        typer.echo(render.json_line({"id": result.id, "duplicate": result.duplicate}))
    else:
        typer.echo(str(result.id))
    if result.duplicate:
        typer.echo(f"Already stored as memory {result.id}; not added again.", err=True)


def _add_one(store: MemoryStore, memory: NewMemory) -> AddResult:
    existing = store.find_duplicate(memory)
    if existing is not None:  # re-adding is free: no model load
        return AddResult(id=existing, duplicate=True)
    embedder, stamp = _embedder_for(store)
    embedded = embedder.embed_documents([memory.text])
    if dropped := embedded.dropped_tokens[0]:
        _warn(
            f"the text is longer than the model's {embedder.spec.max_tokens}-token window; "
            f"its last {dropped} tokens were not embedded and do not count in searches"
        )
    return store.add(memory, embedded.vectors[0], stamp)


@app.command()
def search(
    query: Annotated[
        list[str] | None,
        typer.Argument(metavar="QUERY", help="What to look for (words are joined); - reads stdin."),
    ] = None,
    limit: LimitOption = DEFAULT_SEARCH_LIMIT,
    min_score: Annotated[
        float | None,
        typer.Option("--min-score", metavar="COSINE", help="Leave out hits below this raw cosine (-1..1)."),
    ] = None,
    user: UserOption = None,
    conversation: ConversationOption = None,
    tag: TagOption = None,
    json_out: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Find memories by meaning, best first.

    Scores are the raw cosine similarity of query and memory (-1..1). Exit 1 if nothing matched.
    """
    text = read_text(query, _stdin(), what="query")
    threshold = check_min_score(min_score)
    filters = _filters(user, conversation, tag)
    with _opened(store, create=False) as opened:
        if opened is None or opened.model is None:
            raise typer.Exit(EXIT_NOTHING_FOUND)
        embedder, _ = _embedder_for(opened)
        vector = embedder.embed_queries([text]).vectors[0]
        hits = opened.search(vector, limit, filters, threshold)
    if not hits:
        raise typer.Exit(EXIT_NOTHING_FOUND)
    _print_results(hits, json_out, render.hit_record, render.hits_table)


@app.command("list")
def list_memories(
    limit: LimitOption = DEFAULT_LIST_LIMIT,
    user: UserOption = None,
    conversation: ConversationOption = None,
    tag: TagOption = None,
    json_out: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """Show memories, newest first. Exit 1 if there are none."""
    filters = _filters(user, conversation, tag)
    with _opened(store, create=False) as opened:
        memories = [] if opened is None else opened.newest(filters, limit)
    if not memories:
        raise typer.Exit(EXIT_NOTHING_FOUND)
    _print_results(memories, json_out, render.memory_record, render.memories_table)


@app.command()
def export(
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write to this file (0600, atomically) instead of stdout."
        ),
    ] = None,
    store: StoreOption = None,
) -> None:
    """Write every memory as JSON Lines, in id order.

    Every field but the vector: id, text, sha256, created_at, user, conversation, role, tags, meta.
    """
    with _opened(store, create=False) as opened:
        records = () if opened is None else opened.iter_all()
        if output is None:
            for memory in records:
                typer.echo(render.json_line(render.memory_record(memory)))
            return
        from remem.atomic import atomic_writer  # noqa: PLC0415

        try:
            with atomic_writer(output.expanduser()) as handle:
                for memory in records:
                    handle.write(render.json_line(render.memory_record(memory)).encode() + b"\n")
        except OSError as exc:
            raise RememError(f"cannot write {output}: {exc.strerror or exc}") from exc


def _fail(message: str) -> int:
    typer.echo(f"Error: {' '.join(message.split())}", err=True)
    return EXIT_FAILURE


def _describe(exc: Exception) -> str:
    """One line for the user; an unexpected exception is named, not traced (it may hold memory text)."""
    if isinstance(exc, typer.TyperException):  # usage errors: bad option, missing argument…
        return exc.format_message()
    if isinstance(exc, RememError):
        return str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    if debug_enabled(os.environ):
        raise exc
    return f"unexpected {type(exc).__name__}: {exc} (set REMEM_DEBUG=1 for a traceback)"


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; errors become one ``Error: ...`` line on stderr."""
    try:
        result = typer.main.get_command(app).main(args=argv, prog_name="remem", standalone_mode=False)
    except BrokenPipeError:  # e.g. `remem export | head`: the reader went away; that is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (KeyboardInterrupt, typer.Abort):
        typer.echo("Interrupted.", err=True)
        return 130
    except Exception as exc:
        return _fail(_describe(exc))
    return result if isinstance(result, int) else EXIT_OK
