"""Re-embedding every memory with another model: staged, resumable, swapped in atomically.

New vectors are written to a staging table in committed batches while the old vectors and index
keep serving searches; an interrupted run resumes where it stopped. The swap happens under the
write lock in one transaction (memories added or edited meanwhile are embedded first), then the new
index file replaces the old one.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING

from remem.backends.local import sync
from remem.backends.local.settings import write_model
from remem.backends.local.transactions import atomic
from remem.backends.shapes import windows_of
from remem.reports import ReembedReport
from remem.types import ModelInfo

if TYPE_CHECKING:
    from remem.backends.base import EmbedFn, ProgressFn
    from remem.backends.local.home import Home


#: One row per memory; ``vector`` holds its window vectors one after another (float32).
_STAGING = """CREATE TABLE IF NOT EXISTS vectors_next (
    memory_id INTEGER PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
    sha256 TEXT NOT NULL,
    vector BLOB NOT NULL
)"""
_TARGET_KEY = "reembed_target"


def _stage(home: Home, target: ModelInfo) -> int:
    """Create or reuse the staging table for ``target``; returns how many memories are staged."""
    conn = home.records.conn
    conn.execute(_STAGING)
    if home.records.get_meta(_TARGET_KEY) != json.dumps(asdict(target)):
        with atomic(conn):
            conn.execute("DELETE FROM vectors_next")
            home.records.set_meta(_TARGET_KEY, json.dumps(asdict(target)))
    return int(conn.execute("SELECT count(*) FROM vectors_next").fetchone()[0])


def _pending(home: Home, limit: int) -> list[tuple[int, str, str]]:
    """Memories without a staged vector of their current text: (id, text, sha256)."""
    sql = (
        "SELECT m.id, m.text, m.sha256 FROM memories m LEFT JOIN vectors_next n ON n.memory_id = m.id "
        "WHERE n.memory_id IS NULL OR n.sha256 != m.sha256 ORDER BY m.id LIMIT ?"
    )
    return [(int(i), t, s) for i, t, s in home.records.conn.execute(sql, (limit,))]


def _embed_pending(home: Home, embed: EmbedFn, dim: int, batch: int, progress: ProgressFn | None) -> int:
    done = 0
    total = home.records.count()
    while rows := _pending(home, batch):
        windows = windows_of(embed([(mid, text) for mid, text, _ in rows]), len(rows), dim)
        conn = home.records.conn
        with atomic(conn):
            conn.executemany(
                "INSERT OR REPLACE INTO vectors_next (memory_id, sha256, vector) VALUES (?, ?, ?)",
                [
                    (mid, sha, vectors.astype("<f4").tobytes())
                    for (mid, _, sha), vectors in zip(rows, windows, strict=True)
                ],
            )
        done += len(rows)
        if progress is not None:
            staged = int(conn.execute("SELECT count(*) FROM vectors_next").fetchone()[0])
            progress(min(staged, total), total)
    return done


def reembed(
    home: Home,
    target: ModelInfo,
    embed: EmbedFn,
    batch: int = 64,
    progress: ProgressFn | None = None,
    force: bool = False,
) -> ReembedReport:
    """Re-embed every memory with ``target`` and make it the store's model (see the module docstring).

    Does nothing when the store already uses ``target`` and nothing is staged, unless ``force``
    (e.g. to move a store made by an earlier remem onto the file remem ships).
    """
    if not force and home.model == target and home.records.get_meta(_TARGET_KEY) is None:
        return ReembedReport(0, 0, swapped=False)
    resumed = _stage(home, target)
    embedded = _embed_pending(home, embed, target.dim, batch, progress)
    with home.write_lock():
        embedded += _embed_pending(home, embed, target.dim, batch, progress)  # added or edited meanwhile
        _swap(home, target)
        settings = home.settings
        sync.build(home.records, target.dim, settings.built_kind, settings.hnsw).save(home.index_path)
    return ReembedReport(embedded, resumed, swapped=True)


def _swap(home: Home, target: ModelInfo) -> None:
    with atomic(home.records.conn) as conn:
        conn.execute("DELETE FROM vectors")
        step = 4 * target.dim
        staged = conn.execute("SELECT memory_id, vector FROM vectors_next ORDER BY memory_id")
        conn.executemany(
            "INSERT INTO vectors (memory_id, window, vector) VALUES (?, ?, ?)",
            (
                (mid, window, blob[start : start + step])
                for mid, blob in staged
                for window, start in enumerate(range(0, len(blob), step))
            ),
        )
        conn.execute("DELETE FROM vectors_next")
        conn.execute("DELETE FROM store_meta WHERE key = ?", (_TARGET_KEY,))
        write_model(home.records, target)
        home.records.bump_generation()
