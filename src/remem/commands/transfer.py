"""Taking memories out and putting them back: export and import."""

import functools
import stat
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

import remem
from remem import render
from remem.commands import options as opt
from remem.commands.bulk import import_history, ingest, print_report
from remem.commands.common import open_memories, terminal_width
from remem.errors import InvalidInputError, RememError
from remem.exports import ExportFormat, csv_lines, markdown_lines
from remem.ingest import export_entries
from remem.inputs import MAX_TEXT_CHARS


def register(app: typer.Typer) -> None:
    """Add these commands to the app."""
    app.command()(export)
    app.command("import")(import_memories)


def _lines(
    memories: "remem.Memories", filters: remem.Filters, fmt: ExportFormat, with_vectors: bool
) -> Iterator[str]:
    if fmt is ExportFormat.CSV:  # every format holds the superseded and expired memories, as JSONL does
        return csv_lines(memories.iter(where=filters.everything()))
    if fmt is ExportFormat.MARKDOWN:
        return markdown_lines(memories.iter(where=filters.everything()))
    records = memories.export(with_vectors=with_vectors, where=filters)
    return (render.json_line(record) + "\n" for record in records)


@opt.with_filters(*opt.SELECTING)
def export(
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Write to this file (0600, atomically), not stdout."
        ),
    ] = None,
    fmt: Annotated[
        ExportFormat, typer.Option("--format", "-f", help="jsonl (lossless), csv or markdown.")
    ] = (ExportFormat.JSONL),
    with_vectors: Annotated[
        bool,
        typer.Option("--with-vectors", help="JSONL: include each vector (base64 float32) and its model."),
    ] = False,
    filters: remem.Filters = opt.NO_FILTERS,
    store: opt.StoreOption = None,
) -> None:
    """Write memories in id order: JSON Lines (every field; `remem import` reads it back), CSV
    (safe to open in a spreadsheet) or Markdown (grouped by conversation). Takes the filters."""
    if with_vectors and fmt is not ExportFormat.JSONL:
        raise InvalidInputError("--with-vectors needs --format jsonl")
    # A missing store is an error, before -o is touched: `export -o backup.jsonl` after a typo in
    # $REMEM_HOME must not replace yesterday's backup with an empty file.
    with open_memories(store, create=False, if_missing="fail") as memories:
        assert memories is not None
        lines = _lines(memories, filters, fmt, with_vectors)
        if output is None:
            for line in _shown(lines, fmt, terminal_width() is not None):
                typer.echo(line, nl=False)
            return
        _write(output.expanduser(), Path(memories.location), lines, fmt)


def _shown(lines: Iterator[str], fmt: ExportFormat, terminal: bool) -> Iterator[str]:
    """The export's ``lines`` as written to a ``terminal`` or not: on a terminal, CSV and Markdown
    are made safe to show (``render.visible``: a member's escape sequences, carriage returns and
    bidi overrides become visible escapes; line breaks and tabs stay). A file or a pipe gets the
    export as before, and JSON Lines is never changed (JSON escapes control characters)."""
    if not terminal or fmt is ExportFormat.JSONL:
        return lines
    return (render.visible(line, keep="\n\t") for line in lines)


def _write(target: Path, store_dir: Path, lines: Iterator[str], fmt: ExportFormat) -> None:
    """Write the export to ``target``: a regular file is replaced atomically (through a symlink,
    the file it points to); a device or FIFO (``/dev/stdout``) is written in place (a terminal as
    ``_shown`` says)."""
    from remem.atomic import atomic_writer  # noqa: PLC0415

    real, in_place = _output_target(target, store_dir)
    try:
        with real.open("wb") if in_place else atomic_writer(real) as handle:
            for line in _shown(lines, fmt, in_place and handle.isatty()):
                handle.write(line.encode())
    except OSError as exc:
        raise RememError(f"cannot write {target}: {exc.strerror or exc}") from exc


def _output_target(target: Path, store_dir: Path) -> tuple[Path, bool]:
    """(the path to write, whether in place); InvalidInputError for a directory, a dangling
    symlink, or a file inside the store (never overwrite the store's own files)."""
    if target.is_dir():
        raise InvalidInputError(f"--output {target} is a directory; give a file name")
    try:
        mode = target.stat().st_mode  # follows symlinks
    except FileNotFoundError:
        if target.is_symlink():
            raise InvalidInputError(f"--output {target} is a symbolic link to nothing") from None
        real = target.absolute().parent.resolve() / target.name
    else:
        if not stat.S_ISREG(mode):
            return target, True
        real = target.resolve()
    if real.parent == store_dir.resolve():
        raise InvalidInputError(
            f"--output {target} is inside the store {store_dir}; write the export elsewhere"
        )
    return real, False


class Source(str, Enum):
    """What ``remem import --from`` reads."""

    REMEM = "remem"
    CHATGPT = "chatgpt"
    CLAUDE = "claude"
    MARKDOWN = "markdown"


def import_memories(
    source: Annotated[
        str,
        typer.Argument(
            metavar="PATH",
            help="remem JSONL export to read (- is stdin); with --from chatgpt/claude: the export's "
            "conversations.json; with --from markdown: a folder of notes.",
        ),
    ],
    origin: Annotated[
        Source,
        typer.Option(
            "--from",
            help="remem (its own export), chatgpt or claude (their data export), markdown (a folder).",
        ),
    ] = Source.REMEM,
    user: opt.UserOption = None,
    skip_invalid: Annotated[
        bool, typer.Option("--skip-invalid", help="Import the good lines, report bad ones.")
    ] = (False),
    max_chars: opt.MaxCharsOption = MAX_TEXT_CHARS,
    json_out: opt.JsonOption = False,
    store: opt.StoreOption = None,
) -> None:
    """Add the memories of a `remem export` (JSONL) file, or another tool's history, in one transaction.

    Keeps their order, timestamps, who wrote them ("import" for records that do not say, and for
    another tool's history) and (where unused here) ids; skips duplicates; reuses exported
    vectors made by this store's model and embeds the others. With --from chatgpt|claude each
    message is a conversation turn; with --from markdown each note (or section of a long one) a
    memory. Importing again adds only what is new; an interrupted import resumes.
    """
    if origin is not Source.REMEM:
        if skip_invalid:
            raise InvalidInputError("--skip-invalid is for remem's own export; other sources skip and count")
        import_history(origin.value, source, user, max_chars, store, json_out)
        return
    if user is not None:
        raise InvalidInputError("--user is for --from chatgpt, claude or markdown; an export keeps its users")
    parse = functools.partial(export_entries, max_chars=max_chars)
    report = ingest(source, parse, skip_invalid, max_chars, store, writer=None)  # each record says
    print_report(report, json_out)
