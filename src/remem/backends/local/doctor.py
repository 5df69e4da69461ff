"""Checking everything a store consists of, and repairing what can be derived again."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from typing import TYPE_CHECKING

from remem.backends.local import fts, sync
from remem.backends.local.maintenance import keywords_are_current, leftover_temp_files, loose_permissions
from remem.backends.local.transactions import atomic
from remem.backends.local.vectors import IndexFileError, VectorIndex
from remem.errors import StoreError
from remem.reports import Check

if TYPE_CHECKING:
    from remem.backends.local.store import LocalBackend


def _database(store: LocalBackend) -> Check:
    try:
        (result,) = store.records.conn.execute("PRAGMA quick_check").fetchone()
    except sqlite3.DatabaseError as exc:
        result = str(exc)
    detail = f"{store.records.count()} memories, {store.records.vector_count()} vectors, schema ok"
    return Check("database", result == "ok", detail if result == "ok" else f"quick_check: {result}")


def _keywords(store: LocalBackend) -> Check:
    conn = store.records.conn
    try:
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
        intact = True
    except sqlite3.DatabaseError:
        intact = False
    current = keywords_are_current(store)
    detail = (
        "one entry per memory, current analyzer" if intact and current else "out of step with the memories"
    )
    return Check("keyword index", intact and current, detail, repairable=True)


def _vectors(store: LocalBackend) -> Check:
    """Every vector of the store's model's size; memories without vectors are waiting (added
    before the model was loaded) and said so, not a fault."""
    model = store.model
    waiting = store.pending_count()
    note = f"; {waiting} waiting to be embedded (`remem reindex` embeds them)" if waiting else ""
    if model is None:
        ok = store.records.vector_count() == 0
        return Check("vectors", ok, ("no model recorded" if ok else "vectors without a model") + note)
    (wrong,) = store.records.conn.execute(
        "SELECT count(*) FROM vectors WHERE length(vector) != ?", (4 * model.dim,)
    ).fetchone()
    odd = _not_unit(store, model.dim)
    problems = [f"{wrong} vectors of the wrong size"] if wrong else []
    if odd:
        problems.append(
            f"{odd} vectors not finite or not of unit length (`remem reindex --model "
            f"{model.name} --force` embeds everything again)"
        )
    detail = "; ".join(problems) or f"{model.name}, {model.dim}-d"
    return Check("vectors", not problems, detail + note)


def _not_unit(store: LocalBackend, dim: int) -> int:
    """How many stored vectors of the right size have a NaN/inf or a length away from 1."""
    import numpy as np  # noqa: PLC0415

    from remem.arrays import UNIT_TOLERANCE  # noqa: PLC0415

    odd = 0
    for chunk in store.records.iter_vectors():
        blobs = [blob for _, blob in chunk if len(blob) == 4 * dim]
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim)
        with np.errstate(all="ignore"):
            lengths = np.linalg.norm(matrix, axis=1)
        odd += int(np.count_nonzero(~(np.abs(lengths - 1.0) <= UNIT_TOLERANCE)))  # NaN counts too
    return odd


def _index_file(store: LocalBackend) -> Check:
    model = store.model
    if model is None:
        return Check("vector index", True, "no vectors yet")
    try:
        index = VectorIndex.load(store.index_path, model.dim)
    except IndexFileError as exc:
        return Check("vector index", False, str(exc), repairable=True)
    live = set(index.ids().tolist()) - index.tombstones
    problems = []
    if index.header.store_id != store.records.store_id():
        problems.append("belongs to another store")
    if index.header.generation != store.records.generation():
        problems.append(f"generation {index.header.generation}, database {store.records.generation()}")
    if live != set(store.records.vector_ids()):
        problems.append(f"{len(live)} vectors where the database has {store.records.vector_count()}")
    detail = f"{index.kind.value}, {len(live)} vectors, {len(index.tombstones)} tombstones"
    return Check("vector index", not problems, "; ".join(problems) or detail, repairable=True)


def _files(store: LocalBackend, removed: list[str]) -> list[Check]:
    loose = loose_permissions(store.directory)
    leftovers = leftover_temp_files(store.directory)
    found = (
        ", ".join(p.name for p in leftovers)
        if leftovers
        else f"removed {', '.join(removed)} (left by an interrupted write)"
        if removed
        else "none left over"
    )
    return [
        Check(
            "permissions",
            not loose,
            ", ".join(str(p) for p in loose) or "private (0700/0600)",
            repairable=True,
        ),
        Check("temporary files", not leftovers, found, True),
    ]


def recover(store: LocalBackend) -> None:
    """The recovery every command does on open, made explicit: catch the index file up with SQLite
    (after a writer died between its commit and its save) and remove leftover temporary files."""
    model = store.model
    with store.write_lock():
        if model is not None:
            with contextlib.suppress(StoreError):
                synced = sync.synced_index(
                    store.records, store.index_path, model.dim, store.settings.built_kind, store.settings.hnsw
                )
                if synced.changed and synced.warning is None:
                    synced.index.save(store.index_path)


def examine(store: LocalBackend, removed: list[str] | None = None) -> list[Check]:
    """Every check of the store's database, keyword index, vectors, index file and files
    (``removed``: temporary files the recovery removed, reported as such)."""
    return [
        _database(store),
        _keywords(store),
        _vectors(store),
        _index_file(store),
        *_files(store, removed or []),
    ]


def diagnose(store: LocalBackend, repair_: bool) -> tuple[list[Check], list[str]]:
    """Recover as every command does (noting the temporary files that removes), repair what can be
    derived again when ``repair_``, then examine: (checks, what was repaired)."""
    leftovers = [path.name for path in leftover_temp_files(store.directory)]
    recover(store)
    removed = [name for name in leftovers if not (store.directory / name).exists()]
    repaired = repair(store) if repair_ else []
    return examine(store, removed), repaired


def repair(store: LocalBackend) -> list[str]:
    """Rebuild what is derived (index file, keyword table), tighten permissions, remove temp files.

    Returns what was done. Damage to the database itself is not repaired here.
    """
    done = []
    with store.write_lock():
        checks = {check.name: check for check in examine(store)}
        model = store.model
        if not checks["vector index"].ok and model is not None:
            settings = store.settings
            sync.build(store.records, model.dim, settings.built_kind, settings.hnsw).save(store.index_path)
            done.append("rebuilt the vector index from the stored vectors")
        if not checks["keyword index"].ok:
            with atomic(store.records.conn) as conn:
                fts.rebuild(conn)
            done.append("rebuilt the keyword index")
        for path in loose_permissions(store.directory):
            os.chmod(path, 0o700 if path.is_dir() else 0o600)
            done.append(f"made {path} private")
        for path in leftover_temp_files(store.directory):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            done.append(f"removed {path.name}")
    return done
