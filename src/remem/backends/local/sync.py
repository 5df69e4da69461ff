"""Reading the vector index checkpoint level with SQLite, which is always the truth.

SQLite counts every committed change to the vectors (its *generation*) and logs the vector ids each
one deleted (``Records.log_deleted``); the index file is a checkpoint that records the generation
and the highest vector id it was saved at. Writers only commit. On open:
- same generation: the file is used as is;
- file behind (the normal case): caught up from what changed since — the vectors with a larger id
  are added, the logged deletions tombstoned — then checked against SQLite's count of vectors; if
  they differ (a log pruned past it, a store written by an older remem), caught up from every id;
- file missing, unreadable, of another shape, or *ahead* of the database (a restored backup):
  rebuilt from the stored vectors, with a warning when that is not simply a new store — except
  inside a read snapshot, where a file ahead was saved by a writer that committed after the snapshot
  began: it is used as is (its extra vectors name memories the snapshot does not see, and are
  dropped when hits are mapped to memories).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from remem.backends.local import verified
from remem.backends.local.kinds import HnswParams, IndexKind
from remem.backends.local.records import Records
from remem.backends.local.transactions import snapshot
from remem.backends.local.vectors import IndexFileError, VectorIndex
from remem.backends.local.vectors_header import read_header

#: An exact checkpoint is rewritten once more than this many vectors were added or deleted since
#: it was saved. At the bound a cold reader reads 10,000 rows (15 MB of 384-d vectors) from SQLite:
#: on a 100k exact store opening and catching up 10,000 adds and 1,000 forgets took 0.10-0.22 s
#: against 0.04-0.10 s for a fresh file (2 busy cores), and a warm scan does 10% more work at 100k
#: (1% at a million). Rewriting the 100k file took 1.9 s: at 10,000 adds apart ~0.2 ms and 15 KB
#: written per add (bench/writes.py). At a million (exact, 2 cores at load 12, medians of 5) catching
#: up 9,990 vectors took ~0.15 s — reading the rows 49-71 ms, decoding 12-26, adding them 17-36,
#: the log and the count 11-22 — against 0.14-0.32 s to map and verify the file and 0.97-1.19 s to
#: score every vector once: a tenth of a cold search's vector work, so a lower bound would make
#: rewrites (14 s each there) more frequent for little; a cold search at a million is its full scan.
LAG_BOUND = 10_000
#: HNSW's bound (at most ``LAG_BOUND``): the vectors added since are scored exactly beside the graph,
#: and 10,000 of them cost a warm search at 100k ~17 ms against ~5 ms for the graph walk (busy
#: cores); 2,000 cost a few ms. Extending the 100k graph by 10,000 took 7.6 s, so ~1.5 s per 2,000.
HNSW_LAG_BOUND = 2_000


def bound(kind: IndexKind) -> int:
    """How many vectors added or deleted since a checkpoint of this kind make it rewritten."""
    return LAG_BOUND if kind is IndexKind.EXACT else min(LAG_BOUND, HNSW_LAG_BOUND)


@dataclass(frozen=True)
class Synced:
    """An index level with SQLite; ``changed`` if it was rebuilt (its file should be written
    again); a warning if that repaired something."""

    index: VectorIndex
    changed: bool
    warning: str | None = None


def build(records: Records, dim: int, kind: IndexKind, hnsw: HnswParams) -> VectorIndex:
    """A new index holding every stored vector, at the database's current generation."""
    index = VectorIndex.empty(dim, kind, hnsw, generation=records.generation())
    index.header.store_id = records.store_id()
    add_stored(records, index, dim)
    return index


def add_stored(
    records: Records, index: VectorIndex, dim: int, ids: list[int] | None = None, after: int = -1
) -> None:
    """Add stored vectors (``ids``, else all with an id above ``after``) to ``index``, in chunks."""
    for chunk in records.iter_vectors(ids, after=after):
        matrix = np.frombuffer(b"".join(blob for _, blob in chunk), dtype="<f4").reshape(len(chunk), dim)
        index.add([vid for vid, _ in chunk], matrix)


def synced_index(
    records: Records, path: Path, dim: int, kind: IndexKind, hnsw: HnswParams, in_snapshot: bool = False
) -> Synced:
    """The index in ``path`` brought level with SQLite (see the module docstring; ``in_snapshot``:
    the database is read through a snapshot that a later commit may have passed).

    ``kind`` and ``hnsw`` are used only when the index has to be built from scratch.
    """
    trusted = verified.recorded(records)
    try:
        index = VectorIndex.load(path, dim, trusted)
    except IndexFileError as exc:
        fresh = not path.exists() and not records.vector_ids()
        warning = None if fresh else f"{exc}; rebuilt it from the database"
        return Synced(build(records, dim, kind, hnsw), changed=True, warning=warning)
    # Read after the file: writers commit before they save, so an honest file is never ahead.
    generation, stored = records.generation_and_vector_count()
    if in_snapshot and index.header.generation > generation and index.header.store_id == records.store_id():
        return Synced(index, changed=False)  # saved after the snapshot began: newer, not wrong
    problem = _inconsistency(records, index, generation, stored)
    if problem:
        warning = f"{path} {problem}; rebuilt it from the database"
        return Synced(build(records, dim, index.kind, index.header.hnsw), changed=True, warning=warning)
    if index.verified is not None and index.verified != trusted:
        verified.record(records, index.verified)  # the next process need not hash it again
    if index.header.generation == generation:
        return Synced(index, changed=False)
    catch_up(records, index, dim)
    return Synced(index, changed=False)


def _inconsistency(records: Records, index: VectorIndex, generation: int, stored: int) -> str | None:
    """Why the file cannot be trusted or caught up, or None (``stored``: vectors at ``generation``)."""
    if index.header.store_id != records.store_id():
        return "belongs to another store"
    if index.header.generation > generation:
        return "is newer than the database (restored from a backup?)"
    if index.header.generation == generation and index.size != stored:
        return f"holds {index.size} vectors where the database has {stored}"
    return None


def catch_up(records: Records, index: VectorIndex, dim: int) -> None:
    """Add the stored vectors the index lacks and drop the ones the database no longer has, reading
    only what changed since the index's generation when the log of deletions reaches back to it.

    The reads share one snapshot of the database, whose generation the index then records.
    """
    with snapshot(records.conn):
        generation, stored = records.generation_and_vector_count()
        deleted = records.deleted_since(index.header.generation)
        if deleted is not None:
            index.remove(deleted)
            add_stored(records, index, dim, after=index.header.max_id)
        if deleted is None or index.size != stored:
            _catch_up_from_every_id(records, index, dim)
        index.header.generation = generation


def _catch_up_from_every_id(records: Records, index: VectorIndex, dim: int) -> None:
    """``catch_up`` by comparing every id the index holds with every id SQLite does."""
    indexed = set(index.ids().tolist())
    live = set(records.vector_ids())
    index.remove(sorted(indexed - live))
    add_stored(records, index, dim, sorted(live - indexed))


def lag(records: Records, path: Path) -> int | None:
    """How many vectors were added or deleted since the checkpoint in ``path`` was saved (read from
    its header, not the file), or None when there is no usable checkpoint."""
    header = read_header(path)
    if header is None or header.get("store_id") != records.store_id():
        return None
    generation, highest = int(header["generation"]), int(header.get("max_id", -1))
    with snapshot(records.conn):
        deleted = records.deleted_since(generation)
        added, _ = records.vectors_after(highest)
    return None if deleted is None else added + len(deleted)


def behind(records: Records, path: Path, kind: IndexKind, share: float = 1.0) -> bool:
    """True when the checkpoint in ``path`` lags more than ``share`` of its bound (``bound``), or
    there is no usable one."""
    lagging = lag(records, path)
    return lagging is None or lagging > int(bound(kind) * share)


def cached_index(
    records: Records,
    cached: VectorIndex | None,
    path: Path,
    dim: int,
    kind: IndexKind,
    hnsw: HnswParams,
    in_snapshot: bool = False,
) -> Synced:
    """``cached`` (an index this process synced before) caught up incrementally when it is of this
    store, of the kind and parameters the store's settings now name (a reindex elsewhere may have
    rebuilt it), not ahead of the database (inside a read snapshot it may be: another thread of
    this process committed after the snapshot began, as with a file) and not older than the log of
    deletions (a checkpoint written since pruned it) — no file read; else the file, synced."""
    same_shape = (  # an exact index has no graph: its header's HNSW parameters name nothing
        cached is not None
        and (cached.kind, cached.header.dim) == (kind, dim)
        and (kind is IndexKind.EXACT or cached.header.hnsw == hnsw)
    )
    if cached is not None and same_shape and cached.header.store_id == records.store_id():
        generation = records.generation()
        if cached.header.generation == generation or (in_snapshot and cached.header.generation > generation):
            return Synced(cached, changed=False)
        if cached.header.generation < generation and records.logs_deletions_since(cached.header.generation):
            catch_up(records, cached, dim)
            return Synced(cached, changed=False)
    return synced_index(records, path, dim, kind, hnsw, in_snapshot)
