"""What the commands share: opening the store, joining it with its embedder, printing results.

This and the other ``remem.commands`` modules are the CLI layer, the only code that joins embedder
and store.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

import typer

from remem import render
from remem.config import resolve_store_dir
from remem.errors import InvalidInputError
from remem.index import Filters, MemoryStore, StoreNotFoundError
from remem.index.memory import utc_iso
from remem.inputs import clean_name, clean_tags, parse_meta, parse_when

if TYPE_CHECKING:
    from remem.embedders.pooling import FloatArray
    from remem.embedders.runner import OnnxEmbedder

EXIT_OK, EXIT_NOTHING_FOUND, EXIT_FAILURE = 0, 1, 2
T = TypeVar("T")


def filters_from(
    user: str | None = None,
    conversation: str | None = None,
    tags: list[str] | None = None,
    *,
    role: str | None = None,
    meta: list[str] | None = None,
    since: str | None = None,
    until: str | None = None,
) -> Filters:
    """Filters from the shared filter options, validated (times become UTC ISO strings)."""
    now = datetime.now(timezone.utc)
    start, end = parse_when(since, "--since", now), parse_when(until, "--until", now)
    if start is not None and end is not None and start >= end:
        raise InvalidInputError("--since must be before --until")
    return Filters(
        user=clean_name(user, "--user"),
        conversation=clean_name(conversation, "--conversation"),
        role=clean_name(role, "--role"),
        tags=clean_tags(tags),
        meta=tuple(sorted(parse_meta(meta).items())),
        since=None if start is None else utc_iso(start),
        until=None if end is None else utc_iso(end),
    )


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
) -> None:
    """NDJSON with --json, else a table fitted to the terminal."""
    if json_out:
        for item in items:
            typer.echo(render.json_line(to_record(item)))
    else:
        typer.echo(to_table(items, terminal_width()))


_settings = {"quiet": False}


def set_quiet(quiet: bool) -> None:
    """With ``quiet``, notes and warnings are not printed (errors always are)."""
    _settings["quiet"] = quiet


def note(message: str) -> None:
    """One line for the human on stderr (a summary, a hint); silent with --quiet."""
    if not _settings["quiet"]:
        typer.echo(message, err=True)


def warn(message: str) -> None:
    """One ``Warning: ...`` line on stderr; silent with --quiet."""
    note(f"Warning: {message}")


@contextlib.contextmanager
def open_store(option: Path | None, *, create: bool) -> Iterator[MemoryStore | None]:
    """The store, or None when a read-only command finds none; its self-repairs become warnings."""
    try:
        store = MemoryStore.open(resolve_store_dir(option, os.environ), create=create)
    except StoreNotFoundError:
        yield None
        return
    try:
        yield store
    finally:
        for warning in store.warnings:
            warn(warning)
        store.close()


@contextlib.contextmanager
def progress_bar(length: int, label: str) -> Iterator[Any]:
    """A progress bar on stderr when it is a terminal (yields it), else None; never with --quiet."""
    if _settings["quiet"] or not sys.stderr.isatty():
        yield None
        return
    with typer.progressbar(length=length, label=label, file=sys.stderr) as bar:
        yield bar


def embed_document(embedder: OnnxEmbedder, text: str) -> FloatArray:
    """The vectors of one text to store: (windows, dim), one row per window of a long text."""
    rows: FloatArray = embedder.embed_documents([text]).windows[0]
    return rows
