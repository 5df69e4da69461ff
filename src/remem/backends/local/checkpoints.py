"""Writing the vector index checkpoint: the file made level with one snapshot of the database,
atomically, and the log of deletions it holds pruned.

The rewrite holds no writers' lock while it writes (1.9 s for an exact 100k store, 15.6 s at a
million; HNSW longer): writers commit and readers catch up from the old file meanwhile. Only one
process or thread rewrites at a time (``files.rewriting``); it takes the writers' lock just to rename
the new file into place, and only when the file there is still older than its snapshot and of the
kind and shape the store's settings name (a reindex or another rewrite may have replaced it
meanwhile); then it prunes the log up to its generation.

An exact index is written from the database a block of vectors at a time (``streamed``): it never
holds the vectors added since the last checkpoint in memory, however many a big ingest moved in.
An HNSW graph is read from the file, caught up in the snapshot (``sync``), extended and saved."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from remem.backends.local.files import rewriting
from remem.backends.local.kinds import IndexKind
from remem.backends.local.streamed import write_exact
from remem.backends.local.transactions import atomic, snapshot
from remem.backends.local.vectors_header import read_header

if TYPE_CHECKING:
    from collections.abc import Callable

    from remem.backends.local.home import Home
    from remem.backends.local.vectors import VectorIndex


def write(home: Home, dim: int, index: VectorIndex | None) -> int:
    """Write the checkpoint of the store's vectors at the database's generation (``index``: the
    HNSW index caught up to it; unused for an exact one), the caller holding the writers' lock;
    returns that generation."""
    records = home.records
    if index is None or index.kind is IndexKind.EXACT:
        generation = write_exact(records, home.index_path, dim, home.settings.hnsw)
    else:
        generation = records.generation()
        index.save(home.index_path, generation)
    if not records.conn.in_transaction:  # inside a read snapshot the log is pruned next time
        with atomic(records.conn):
            records.forget_deleted(generation)
    return generation


def rewrite(
    home: Home,
    dim: int,
    *,
    blocking: bool = False,
    serve: Callable[[], None] | None = None,
    threads: int | None = None,
) -> int | None:
    """Write the checkpoint from one snapshot of the database without holding the writers' lock
    (see the module docstring); the generation now in place, or None when nothing was written:
    another rewriter is at work (and not ``blocking``), or the file was replaced meanwhile.
    ``serve`` (a long-lived process's) loads the new file before the log of deletions is pruned:
    until then its searches catch their index up from the log, and none reads the file itself.
    ``threads``: at most so many for extending an HNSW graph (a rewrite in the background of a
    process that searches leaves it the other cores)."""
    from remem.backends.local import sync  # noqa: PLC0415 - sync imports this module's neighbours

    try:
        with rewriting(home.directory, blocking=blocking):
            records = home.records
            with snapshot(records.conn):
                settings = home.settings
                kind = settings.built_kind
                if kind is IndexKind.EXACT:
                    generation = write_exact(records, home.index_path, dim, settings.hnsw, _swap(home))
                else:
                    from remem.backends.local import hnsw  # noqa: PLC0415 - FAISS, for HNSW only

                    index = sync.synced_index(records, home.index_path, dim, kind, settings.hnsw, True).index
                    generation = index.header.generation
                    with hnsw.threads(threads):
                        index.save(home.index_path, swap=_swap(home))
    except BlockingIOError:
        return None
    if _generation_of(home.index_path) != generation:
        return None
    if serve is not None:
        serve()
    with home.write_lock(), atomic(records.conn):  # a newer file may be in place: it holds these too
        records.forget_deleted(generation)
    return generation


def _generation_of(path: Path) -> int | None:
    header = read_header(path)
    return None if header is None else int(header["generation"])


def _swap(home: Home) -> Callable[[Path, Path], bool]:
    """The rename of a rewritten checkpoint into place, under the writers' lock, done only while the
    file there is older than it (or missing, or unusable): every file a writer saves holds the
    generation it saved at, never older than a snapshot taken before (a reindex to another kind, a
    re-embed, another rewrite). It reads no database: the caller is inside its snapshot."""

    def swap(new: Path, path: Path) -> bool:
        header = read_header(new)
        with home.write_lock():
            current = read_header(path)
            if header is None or (
                current is not None
                and current.get("store_id") == header["store_id"]
                and int(current["generation"]) >= int(header["generation"])
            ):
                return False
            os.replace(new, path)
        return True  # atomic_writer syncs the directory

    return swap


def compact(home: Home, dim: int, *, held: bool = False) -> int:
    """Write the checkpoint if any vector was added or deleted since it was saved, or it is missing
    or unusable: ``rewrite`` (waiting for a rewrite at work, never for writers), or with ``held``
    (the caller holds the writers' lock) ``write``; how many vectors it caught up (0: none)."""
    from remem.backends.local import sync  # noqa: PLC0415 - sync imports this module's neighbours

    behind = sync.lag(home.records, home.index_path)
    if behind == 0:
        return 0
    if not held:
        rewrite(home, dim, blocking=True)
    else:
        settings = home.settings
        index = None
        if settings.built_kind is IndexKind.HNSW:
            index = sync.synced_index(
                home.records, home.index_path, dim, settings.built_kind, settings.hnsw
            ).index
        write(home, dim, index)
    return home.records.vector_count() if behind is None else behind
