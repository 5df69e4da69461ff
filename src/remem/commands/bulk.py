"""Adding many memories in one transaction: shared by ``add --lines/--jsonl`` and ``import``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from remem import render
from remem.commands.common import embedder_for, note, progress_bar, stdin, warn
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
        vectors = np.zeros((len(fresh), stamp.dim), dtype=np.float32)
        todo = []
        for row, entry in enumerate(fresh):
            if entry.vector is not None and entry.model == stamp:
                vectors[row] = np.frombuffer(entry.vector, dtype="<f4")
                report.reused_vectors += 1
            else:
                todo.append(row)
        _embed_rows(embedder, [fresh[row].memory.text for row in todo], vectors, todo)
        results = store.add_many([entry.memory for entry in fresh], vectors, stamp)
        report.added = [r.id for r in results if not r.duplicate]
        report.duplicates = [r.id for r in results if r.duplicate]  # added by another process meanwhile
    report.duplicates += [store.find_duplicate(entry.memory) or -1 for entry in duplicates]


def _embed_rows(embedder: OnnxEmbedder, texts: list[str], vectors: FloatArray, rows: list[int]) -> None:
    """Fill ``vectors[rows]`` in chunks, with a progress bar on stderr when it is a terminal."""
    with progress_bar(len(texts), "Embedding") as bar:
        for start in range(0, len(texts), EMBED_CHUNK):
            chunk = texts[start : start + EMBED_CHUNK]
            vectors[rows[start : start + len(chunk)]] = embedder.embed_documents(chunk).vectors
            if bar is not None:
                bar.update(len(chunk))


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
