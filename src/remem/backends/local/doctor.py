"""Checking everything a store consists of, and repairing what can be derived again."""

from __future__ import annotations

import contextlib
import sqlite3
from typing import TYPE_CHECKING

from remem.backends import summary
from remem.backends.local import fts, pending, stored_heads, sync
from remem.backends.local.files import loose_paths, own_temp_files, tighten
from remem.backends.local.guard import DOCTOR_HINT, damage, store_error
from remem.backends.local.maintenance import keywords_are_current
from remem.backends.local.transactions import atomic
from remem.backends.local.vectors import IndexFileError, VectorIndex
from remem.errors import RememError, StoreError
from remem.reports import Check

if TYPE_CHECKING:
    from collections.abc import Callable

    from remem.backends.local.home import Home

#: What stops a check or a repair of a damaged store.
_FAILURES = (RememError, sqlite3.Error, ValueError)


def _database(home: Home) -> Check:
    try:
        (result,) = home.records.conn.execute("PRAGMA quick_check").fetchone()
    except sqlite3.DatabaseError as exc:
        result = str(exc)
    if result != "ok":
        return Check("database", False, f"quick_check: {_one_line(result)}")
    (broken,) = home.records.conn.execute(
        "SELECT count(*) FROM memories "
        "WHERE CASE WHEN json_valid(meta) THEN json_type(meta) != 'object' ELSE 1 END"
    ).fetchone()
    if broken:
        return Check("database", False, f"{broken} memories with damaged metadata (not a JSON object)")
    detail = f"{home.records.count()} memories, {home.records.vector_count()} vectors, schema ok"
    return Check("database", True, detail)


def _one_line(report: str, shown: int = 3) -> str:
    """The first lines of a multi-line report, on one line."""
    lines = [line.strip() for line in report.splitlines() if line.strip()]
    more = f" (and {len(lines) - shown} more)" if len(lines) > shown else ""
    return "; ".join(lines[:shown]) + more


def _keywords(home: Home) -> Check:
    conn = home.records.conn
    unchecked = ""
    try:
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
        intact = True
    except sqlite3.DatabaseError as exc:  # FTS5 checks itself through a write
        intact = "read-only" in str(store_error(exc, None))
        unchecked = " (FTS5 integrity not checked: the store is read-only)" if intact else ""
    current = keywords_are_current(home)
    detail = (
        "one entry per memory, current analyzer" + unchecked
        if intact and current
        else "out of step with the memories"
    )
    return Check("keyword index", intact and current, detail, repairable=True)


def _keyword_heads(home: Home) -> Check:
    """The keyword lane's stored heads (``stored_heads.verify``): a sample of those that serve bounds its
    words' other memories; heads behind are not a fault (``remem compact`` takes them again)."""
    stored, serving, wrong = stored_heads.verify(home.records.conn)
    if wrong:
        return Check(
            "keyword heads", False, f"{wrong} of the {serving + wrong} checked are wrong", repairable=True
        )
    if not stored:
        return Check("keyword heads", True, "none kept")
    behind = " (behind: `remem compact` takes them again)" if stored_heads.behind(home.records.conn) else ""
    return Check("keyword heads", True, f"{stored} words, {serving} checked{behind}")


def _vectors(home: Home) -> Check:
    """Every vector of the store's model's size; memories without vectors are waiting (added
    before the model was loaded) and said so, not a fault."""
    model = home.model
    waiting = pending.pending_count(home.records)
    note = f"; {waiting} waiting to be embedded (`remem reindex` embeds them)" if waiting else ""
    recorded, counted = home.records.vector_count(), _counted_vectors(home)
    if recorded != counted:
        return Check("vectors", False, f"{recorded} recorded as stored where {counted} are", repairable=True)
    if model is None:
        ok = counted == 0
        return Check("vectors", ok, ("no model recorded" if ok else "vectors without a model") + note)
    (wrong,) = home.records.conn.execute(
        "SELECT count(*) FROM vectors WHERE length(vector) != ?", (4 * model.dim,)
    ).fetchone()
    odd = _not_unit(home, model.dim)
    problems = [f"{wrong} vectors of the wrong size"] if wrong else []
    if odd:
        problems.append(
            f"{odd} vectors not finite or not of unit length (`remem reindex --model "
            f"{model.name} --force` embeds everything again)"
        )
    detail = "; ".join(problems) or f"{model.name}, {model.dim}-d"
    return Check("vectors", not problems, detail + note)


def _counted_vectors(home: Home) -> int:
    """The stored vectors counted row by row (``Records.vector_count`` reads what triggers keep)."""
    return int(home.records.conn.execute("SELECT count(*) FROM vectors").fetchone()[0])


def _not_unit(home: Home, dim: int) -> int:
    """How many stored vectors of the right size have a NaN/inf or a length away from 1."""
    import numpy as np  # noqa: PLC0415

    from remem.arrays import UNIT_TOLERANCE  # noqa: PLC0415

    odd = 0
    for chunk in home.records.iter_vectors():
        blobs = [blob for _, blob in chunk if len(blob) == 4 * dim]
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim)
        with np.errstate(all="ignore"):
            lengths = np.linalg.norm(matrix, axis=1)
        odd += int(np.count_nonzero(~(np.abs(lengths - 1.0) <= UNIT_TOLERANCE)))  # NaN counts too
    return odd


def _index_file(home: Home) -> Check:
    model = home.model
    if model is None:
        return Check("vector index", True, "no vectors yet")
    try:
        index = VectorIndex.load(home.index_path, model.dim)
    except IndexFileError as exc:
        return Check("vector index", False, str(exc), repairable=True)
    problems = []
    if index.header.store_id != home.records.store_id():
        problems.append("belongs to another store")
    elif index.header.generation > home.records.generation():
        problems.append(f"generation {index.header.generation}, database {home.records.generation()}")
    else:  # a checkpoint behind the database: what a search would see, caught up
        sync.catch_up(home.records, index, model.dim)
    live = set(index.ids().tolist())
    if live != set(home.records.vector_ids()):
        problems.append(f"{len(live)} vectors where the database has {home.records.vector_count()}")
    detail = f"{index.kind.value}, {len(live)} vectors, {len(index.tombstones)} tombstones"
    return Check("vector index", not problems, "; ".join(problems) or detail, repairable=True)


def _files(home: Home, removed: list[str]) -> list[Check]:
    loose = loose_paths(home.directory)
    leftovers = own_temp_files(home.directory)
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


def recover(home: Home) -> None:
    """The recovery every command does on open, made explicit: rebuild an index file that cannot be
    caught up with SQLite and remove leftover temporary files."""
    model = home.model
    with home.write_lock():
        if model is not None:
            with contextlib.suppress(StoreError):
                synced = sync.synced_index(
                    home.records, home.index_path, model.dim, home.settings.built_kind, home.settings.hnsw
                )
                if synced.changed and synced.warning is None:
                    synced.index.save(home.index_path)  # a new store's first file


def examine(home: Home, removed: list[str] | None = None) -> list[Check]:
    """Every check of the store's database, keyword index, vectors, index file and files
    (``removed``: temporary files the recovery removed, reported as such)."""
    checks = {
        "database": _database,
        "keyword index": _keywords,
        "keyword heads": _keyword_heads,
        "vectors": _vectors,
        "vector index": _index_file,
        "memory links": lambda home: summary.links_check(home.records.conn.execute, "memories"),
    }
    return [*(_checked(name, check, home) for name, check in checks.items()), *_files(home, removed or [])]


def _checked(name: str, check: Callable[[Home], Check], home: Home) -> Check:
    """``check(home)``; a damaged database that stops it is its finding, not a crash."""
    try:
        return check(home)
    except _FAILURES as exc:
        return Check(name, False, f"cannot be checked: {_reason(exc)}")


def _reason(exc: Exception) -> str:
    """What stopped a check or repair, in one line without a memory's text."""
    if isinstance(exc, (sqlite3.Error, ValueError)):
        return damage(exc)
    return str(exc).removesuffix(DOCTOR_HINT)


def diagnose(home: Home, repair_: bool) -> tuple[list[Check], list[str]]:
    """Recover as every command does (noting the temporary files that removes), repair what can be
    derived again when ``repair_``, then examine: (checks, what was repaired)."""
    leftovers = [path.name for path in own_temp_files(home.directory)]
    with contextlib.suppress(*_FAILURES):  # a damaged database is what the checks report
        recover(home)
    removed = [name for name in leftovers if not (home.directory / name).exists()]
    try:
        repaired = repair(home) if repair_ else []
    except _FAILURES as exc:
        repaired = [f"could not repair: {_reason(exc)}"]
    return examine(home, removed), repaired


def repair(home: Home) -> list[str]:
    """Rebuild what is derived (index file, keyword table), tighten permissions, remove temp files.

    Returns what was done. Damage to the database itself is not repaired here.
    """
    done = []
    with home.write_lock():
        checks = {check.name: check for check in examine(home)}
        model = home.model
        if not checks["vector index"].ok and model is not None:
            settings = home.settings
            sync.build(home.records, model.dim, settings.built_kind, settings.hnsw).save(home.index_path)
            done.append("rebuilt the vector index from the stored vectors")
        if not checks["vectors"].ok and checks["vectors"].repairable:
            with atomic(home.records.conn):
                home.records.set_meta("vector_count", str(_counted_vectors(home)))
            done.append("counted the stored vectors again")
        if not checks["keyword index"].ok:
            with atomic(home.records.conn) as conn:
                fts.rebuild(conn)
            done.append("rebuilt the keyword index")
        if not checks["keyword heads"].ok or stored_heads.behind(home.records.conn):
            stored_heads.retake(home.records.conn)
            done.append("took the keyword heads again")
        done.extend(f"made {path} private" for path in tighten(home.directory))
        for path in own_temp_files(home.directory):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            done.append(f"removed {path.name}")
    return done
