"""A local store's vital statistics, read without loading numpy or FAISS: the shared counts
(``backends.summary``) and what only a local store has: its index file and its files' size, and
how its index is sized (an exact index stays exact under ``auto`` until a reindex)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from remem.backends import summary
from remem.backends.local import settings
from remem.backends.local.vectors_header import read_header
from remem.backends.shapes import IndexState

if TYPE_CHECKING:
    from remem.backends.local.home import Home
    from remem.reports import StoreStats

TABLES = summary.Tables(memories="memories", vectors="vectors", tagged="memory_tags")


def summarize(home: Home) -> StoreStats:
    """Counts, model, index, disk size and time span of a local store."""
    header = read_header(home.index_path)
    files = [p for p in home.directory.iterdir() if p.is_file()]
    own = summary.Own(
        model=home.model,
        index=None if header is None else f"{header['kind']} ({len(header['tombstones'])} tombstones)",
        index_setting=home.settings.requested,
        disk_bytes=sum(p.stat().st_size for p in files),
    )
    return summary.gather(home.records.conn.execute, TABLES, own)


def index_state(home: Home) -> IndexState:
    """The kind asked for and the kind built (as the settings record them), the stored vectors, and
    ``settings.AUTO_HNSW_THRESHOLD`` (read now: tests lower it)."""
    recorded = home.settings
    return IndexState(
        requested=recorded.requested,
        kind=recorded.built_kind.value,
        vectors=home.records.vector_count(),
        hnsw_from=settings.AUTO_HNSW_THRESHOLD,
    )
