"""Adding many memories from a file or stdin: shared by ``add --lines/--jsonl`` and ``import``.

The input is read as a stream, never whole. A small one (up to ``PEEK`` lines) is read, and a bad
line refused, before the store is opened, as it always was; past that, a bad line stops the ingest
when it is reached: nothing is added, and what was staged before it is kept for the run that
follows once the line is fixed (``remem.core.staged``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from pathlib import Path

import typer

import remem
from remem import render
from remem.commands.common import (
    CLI_WRITER,
    in_own_words,
    note,
    open_memories,
    progress_bar,
    shows_progress,
    stdin,
    warn,
)
from remem.errors import InvalidInputError
from remem.ingest import IMPORT_WRITER, Entry, LineError, read_lines
from remem.inputs import STDIN_MARKER

#: Entries read before the store is opened: an input this small is checked whole first, so a bad
#: line leaves no store behind (as when every input was read whole).
PEEK = 10_000

#: Parses the lines of an input into entries and line errors (``remem.ingest``'s ``*_entries``).
Parser = Callable[[Iterable[bytes]], Iterator[Entry | LineError]]


@contextlib.contextmanager
def source_lines(source: str) -> Iterator[Iterator[bytes]]:
    """The lines of a file, or of stdin for ``-``, read as a stream (``remem.ingest.read_lines``)."""
    if source == STDIN_MARKER:
        yield _reading(source, read_lines(stdin()))
        return
    try:
        handle = Path(source).expanduser().open("rb")
    except OSError as exc:
        raise InvalidInputError(f"cannot read {source}: {exc.strerror or exc}") from exc
    with handle:
        yield _reading(source, read_lines(handle))


def _reading(source: str, lines: Iterator[bytes]) -> Iterator[bytes]:
    """``lines``, with a failed read as an InvalidInputError naming ``source``."""
    try:
        yield from lines
    except OSError as exc:
        raise InvalidInputError(f"cannot read {source}: {exc.strerror or exc}") from exc


def entries_of(items: Iterator[Entry | LineError], skip_invalid: bool, skipped: list[int]) -> Iterator[Entry]:
    """The entries of parsed input, as read. A bad line is refused (naming it and counting the bad
    lines after it), or with ``skip_invalid`` reported on stderr and its number put in ``skipped``."""
    for item in items:
        if isinstance(item, Entry):
            yield item
        elif not skip_invalid:
            extra = sum(isinstance(rest, LineError) for rest in items)
            more = f" (and {extra} more bad line{'s' if extra > 1 else ''})" if extra else ""
            raise InvalidInputError(
                f"{item}{more}; nothing was added (--skip-invalid adds the rest)", mentions=item.mentions
            )
        else:
            warn(f"skipped {in_own_words(str(item), item.mentions)}")
            skipped.append(item.line)


def ingest(
    source: str,
    parse: Parser,
    skip_invalid: bool,
    max_chars: int,
    store: str | None,
    writer: str | None = CLI_WRITER,
) -> remem.BulkResult:
    """Add the entries of ``source`` (see the module docstring), with a progress bar on a terminal;
    those that do not name who wrote them are written by ``writer``."""
    skipped: list[int] = []
    with source_lines(source) as lines:
        entries = entries_of(parse(lines), skip_invalid, skipped)
        result = store_stream(entries, lambda: _expected(source), max_chars, store, writer)
    result.skipped = skipped
    return result


def store_stream(
    stream: Iterator[Entry],
    expected_of: Callable[[], int],
    max_chars: int,
    store: str | None,
    writer: str | None,
) -> remem.BulkResult:
    """Add ``stream``'s entries to the store (made if missing), those that do not name who wrote
    them as written by ``writer``: the first ``PEEK`` are read before it is opened; past that,
    ``expected_of()`` is how many to expect (0: unknown), for the bar."""
    head = list(islice(stream, PEEK))
    expected = (expected_of() or len(head)) if len(head) == PEEK else len(head)
    with open_memories(store, create=True) as memories, progress_bar(expected, "Embedding") as progress:
        assert memories is not None
        memories.max_text_chars, memories.writer = max_chars, writer
        return memories.add_entries(chain(head, stream), progress=progress, expected=expected)


def _expected(source: str) -> int:
    """How many entries a regular file holds, roughly (its non-blank lines), for the progress bar:
    counted only when the bar is shown (0 when not, or unknown: stdin, a pipe)."""
    path = Path(source).expanduser()
    if source == STDIN_MARKER or not shows_progress() or not path.is_file():
        return 0
    with contextlib.suppress(OSError), path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())
    return 0


def print_report(report: remem.BulkResult, json_out: bool) -> None:
    """The summary: counts on stderr; with --json one object with the ids on stdout."""
    if json_out:
        typer.echo(
            render.json_line(
                {"added": report.added, "duplicates": report.duplicates, "skipped_lines": report.skipped}
            )
        )
    reused = f", {report.reused_vectors} vectors reused" if report.reused_vectors else ""
    counts = f"Added {len(report.added)}, duplicates {len(report.duplicates)}, skipped {len(report.skipped)}"
    note(f"{counts}{reused}.")


def import_history(
    source: str, path: str, user: str | None, max_chars: int, store: str | None, json_out: bool
) -> None:
    """Import another tool's history (``remem.read_history``) and say what it added, what was
    already there, and what the source skipped (and why, for what it could not read)."""
    history = remem.read_history(source, path, user=user, max_chars=max_chars)
    report = store_stream(history.entries(), lambda: 0, max_chars, store, IMPORT_WRITER)
    if json_out:
        typer.echo(
            render.json_line(
                {"added": report.added, "duplicates": report.duplicates, "skipped": history.skipped}
            )
        )
    for line in history.notes:
        warn(line)
    skipped = ", ".join(f"{count:,} {what}" for what, count in history.skipped.items())
    note(
        f"Imported from {source}: {len(report.added):,} new, {len(report.duplicates):,} already there; "
        f"skipped {skipped or 'nothing'}."
    )
