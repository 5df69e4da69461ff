"""Adding many memories in one transaction: shared by ``add --lines/--jsonl`` and ``import``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from remem import render
from remem.commands.common import note, progress_bar, stdin, warn
from remem.commands.modelsel import embedder_for
from remem.errors import InvalidInputError
from remem.index import MemoryStore
from remem.index.memory import text_sha256
from remem.ingest import Entry, Parsed
from remem.inputs import STDIN_MARKER

if TYPE_CHECKING:
    from remem.embedders.pooling import FloatArray
    from remem.embedders.runner import OnnxEmbedder

EMBED_CHUNK = 256


@dataclass
class BulkReport:
    """Ids added, ids of duplicates (existing memories), line numbers skipped, vectors reused."""

    added: list[int] = field(default_factory=list)
    duplicates: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    reused_vectors: int = 0


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
        extra = len(parsed.errors) - 1
        more = f" (and {extra} more bad line{'s' if extra > 1 else ''})" if extra else ""
        raise InvalidInputError(f"{parsed.errors[0]}{more}; nothing was added (--skip-invalid adds the rest)")
    for error in parsed.errors:
        warn(f"skipped {error}")
    return [error.line for error in parsed.errors]


def _split_duplicates(store: MemoryStore, entries: list[Entry]) -> tuple[list[Entry], list[Entry]]:
    """(entries to store, duplicates of a stored memory or of an earlier entry) — so that duplicates
    are never embedded."""
    fresh, duplicates, seen = [], [], set()
    for entry in entries:
        memory = entry.memory
        key = (text_sha256(memory.text), memory.user or "", memory.conversation or "")
        if key in seen or store.find_duplicate(memory) is not None:
            duplicates.append(entry)
        else:
            seen.add(key)
            fresh.append(entry)
    return fresh, duplicates


def store_entries(store: MemoryStore, entries: list[Entry], report: BulkReport) -> None:
    """Embed what needs embedding (reusing vectors made by the store's model), add all in one transaction."""
    import numpy as np  # noqa: PLC0415 - keeps numpy off the startup path

    fresh, duplicates = _split_duplicates(store, entries)
    if fresh:
        embedder, stamp = embedder_for(store)
        windows: list[FloatArray | None] = [None] * len(fresh)
        for row, entry in enumerate(fresh):
            if entry.vector is not None and entry.model == stamp:
                windows[row] = np.frombuffer(entry.vector, dtype="<f4").reshape(-1, stamp.dim)
                report.reused_vectors += 1
        todo = [row for row, found in enumerate(windows) if found is None]
        for row, rows in zip(
            todo, _embed_texts(embedder, [fresh[row].memory.text for row in todo]), strict=True
        ):
            windows[row] = rows
        results = store.add_many(
            [entry.memory for entry in fresh], [w for w in windows if w is not None], stamp
        )
        report.added = [r.id for r in results if not r.duplicate]
        report.duplicates = [r.id for r in results if r.duplicate]  # added by another process meanwhile
    report.duplicates += [store.find_duplicate(entry.memory) or -1 for entry in duplicates]


def _embed_texts(embedder: OnnxEmbedder, texts: list[str]) -> list[FloatArray]:
    """Each text's window vectors, embedded in chunks, with a progress bar on a terminal."""
    embedded: list[FloatArray] = []
    with progress_bar(len(texts), "Embedding") as bar:
        for start in range(0, len(texts), EMBED_CHUNK):
            chunk = texts[start : start + EMBED_CHUNK]
            embedded.extend(embedder.embed_documents(chunk).windows)
            if bar is not None:
                bar.update(len(chunk))
    return embedded


def print_report(report: BulkReport, json_out: bool) -> None:
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
