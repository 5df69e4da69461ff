"""Adding many memories from a file or stdin: shared by ``add --lines/--jsonl`` and ``import``."""

from __future__ import annotations

from pathlib import Path

import typer

import remem
from remem import render
from remem.commands.common import in_own_words, note, progress_bar, stdin, warn
from remem.errors import InvalidInputError
from remem.ingest import Entry, Parsed
from remem.inputs import STDIN_MARKER


def read_source(source: str) -> bytes:
    """All bytes of a file, or of stdin for ``-``."""
    if source == STDIN_MARKER:
        return stdin().read()
    try:
        return Path(source).expanduser().read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"cannot read {source}: {exc.strerror or exc}") from exc


def check_errors(parsed: Parsed, skip_invalid: bool) -> list[int]:
    """Refuse the batch on a bad line (naming it), or with ``skip_invalid`` report and skip them."""
    if parsed.errors and not skip_invalid:
        first, extra = parsed.errors[0], len(parsed.errors) - 1
        more = f" (and {extra} more bad line{'s' if extra > 1 else ''})" if extra else ""
        raise InvalidInputError(
            f"{first}{more}; nothing was added (--skip-invalid adds the rest)", mentions=first.mentions
        )
    for error in parsed.errors:
        warn(f"skipped {in_own_words(str(error), error.mentions)}")
    return [error.line for error in parsed.errors]


def store_entries(memories: remem.Memories, entries: list[Entry], skipped: list[int]) -> remem.BulkResult:
    """Add the entries in one transaction, with a progress bar on a terminal."""
    with progress_bar(len(entries), "Embedding") as progress:
        result = memories.add_entries(entries, progress=progress)
    result.skipped = skipped
    return result


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
