"""Rebuilding a store's derived parts — the vector index file and the keyword table — from its
database (reindex); what is already current is left alone."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from remem.backends.local import checkpoints, fts, stored_heads, sync
from remem.backends.local.kinds import HnswParams, IndexKind
from remem.backends.local.settings import IndexSettings
from remem.backends.local.transactions import atomic
from remem.backends.local.vectors import IndexFileError, VectorIndex
from remem.reports import ReindexReport

if TYPE_CHECKING:
    from remem.backends.local.home import Home


def _index_is_current(home: Home, kind: IndexKind, hnsw: HnswParams) -> bool:
    model = home.model
    if model is None:
        return True
    try:
        index = VectorIndex.load(home.index_path, model.dim)
    except IndexFileError:
        return False
    same_shape = index.kind is kind and (kind is IndexKind.EXACT or index.header.hnsw == hnsw)
    if not same_shape or index.header.store_id != home.records.store_id():
        return False
    if index.header.generation > home.records.generation():
        return False
    sync.catch_up(home.records, index, model.dim)  # a checkpoint behind: current once caught up
    return not index.tombstones and index.size == home.records.vector_count()


def keywords_are_current(home: Home) -> bool:
    """True when the keyword table has exactly one row per memory, built by this analyzer."""
    conn = home.records.conn
    (rows,) = conn.execute("SELECT count(*) FROM memories_fts").fetchone()
    (orphans,) = conn.execute(
        "SELECT count(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memories_fts f WHERE f.rowid = m.id)"
    ).fetchone()
    return fts.is_current(conn) and rows == home.records.count() and orphans == 0


def with_hnsw(current: HnswParams, asked: tuple[int | None, int | None, int | None]) -> HnswParams | None:
    """HNSW parameters with the asked (m, ef_construction, ef_search) replacing the current ones,
    or None when none was asked (the core has checked each is at least 2)."""
    if all(value is None for value in asked):
        return None
    m, ef_construction, ef_search = asked
    values = (m or current.m, ef_construction or current.ef_construction, ef_search or current.ef_search)
    return HnswParams(*values)


def reindex(
    home: Home, requested: str | None = None, hnsw: HnswParams | None = None, force: bool = False
) -> ReindexReport:
    """Rebuild the vector index from the stored vectors (no re-embedding) and the keyword table,
    and take the keyword lane's stored heads again if they are behind (``stored_heads.behind``).

    ``requested`` switches the index kind (exact, hnsw, auto); ``hnsw`` its parameters. What is
    already current is left alone unless ``force``: a second reindex in a row does nothing.
    """
    started = time.perf_counter()
    with home.write_lock():
        settings = home.settings
        wanted = replace(settings, requested=requested or settings.requested, hnsw=hnsw or settings.hnsw)
        count = home.records.vector_count()
        kind = wanted.kind_for(count)
        rebuild_index = home.model is not None and (force or not _index_is_current(home, kind, wanted.hnsw))
        rebuild_keywords = force or not keywords_are_current(home)
        _apply(home, replace(wanted, built_kind=kind), rebuild_index, rebuild_keywords)
        if not rebuild_index and home.model is not None:  # current, but maybe behind its checkpoint
            rebuild_index = checkpoints.compact(home, home.model.dim, held=True) > 0
        if stored_heads.behind(home.records.conn):
            stored_heads.retake(home.records.conn)
    return ReindexReport(kind, count, rebuild_index, rebuild_keywords, time.perf_counter() - started)


def _apply(home: Home, settings: IndexSettings, rebuild_index: bool, rebuild_keywords: bool) -> None:
    with atomic(home.records.conn) as conn:
        settings.write(home.records)
        if rebuild_keywords:
            fts.rebuild(conn)
    model = home.model
    if rebuild_index and model is not None:
        sync.build(home.records, model.dim, settings.built_kind, settings.hnsw).save(home.index_path)
