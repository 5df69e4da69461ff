"""Re-embedding a PostgreSQL store with another model: staged, resumable, swapped in at once.

New vectors go to ``vectors_next`` in committed batches while the old ones keep serving; an
interrupted run resumes where it stopped. The swap holds the store lock exclusively for one
transaction: memories added or edited meanwhile are embedded, the staged vectors replace the old
ones and the model stamp changes; then the HNSW index is built for the new dimension, without
blocking anyone (searches scan exactly meanwhile).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from remem.backends.postgres import settings as meta
from remem.backends.postgres.rows import one_row, one_value
from remem.backends.shapes import windows_of
from remem.reports import ReembedReport

if TYPE_CHECKING:
    import psycopg

    from remem.backends.base import EmbedFn, ProgressFn
    from remem.backends.postgres.access import StoreAccess
    from remem.types import ModelInfo

BATCH = 64


def _unstaged(cursor: psycopg.Cursor[Any], s: str, limit: int) -> list[tuple[int, str, str]]:
    """Memories without a staged vector of their current text: (id, text, sha256)."""
    cursor.execute(
        f"SELECT m.id, m.text, m.sha256 FROM {s}.memories m WHERE NOT EXISTS (SELECT 1 FROM "
        f"{s}.vectors_next n WHERE n.memory_id = m.id AND n.sha256 = m.sha256) ORDER BY m.id LIMIT %s",
        (limit,),
    )
    return [(int(i), str(t), str(h)) for i, t, h in cursor.fetchall()]


def _stage(store: StoreAccess, embed: EmbedFn, dim: int, progress: ProgressFn | None, *, locked: bool) -> int:
    """Embed and stage every unstaged memory, a committed batch at a time (inside the caller's
    transaction when ``locked``); returns how many."""
    s, done = store.s, 0
    while True:
        with store.session.transaction(timeout_ms=0, writes=True) as cursor:
            rows = _unstaged(cursor, s, BATCH)
            if not rows:
                return done
            windows = windows_of(embed([(mid, text) for mid, text, _ in rows]), len(rows), dim)
            cursor.execute(
                f"DELETE FROM {s}.vectors_next WHERE memory_id = ANY(%s::bigint[])", ([r[0] for r in rows],)
            )
            cursor.executemany(
                f"INSERT INTO {s}.vectors_next (memory_id, window_no, sha256, embedding) "
                "VALUES (%s, %s, %s, %s)",
                [
                    (mid, number, sha, vector)
                    for (mid, _, sha), matrix in zip(rows, windows, strict=True)
                    for number, vector in enumerate(matrix)
                ],
            )
            done += len(rows)
            if progress is not None and not locked:
                cursor.execute(
                    f"SELECT (SELECT count(DISTINCT memory_id) FROM {s}.vectors_next), "
                    f"(SELECT count(*) FROM {s}.memories)"
                )
                staged, total = one_row(cursor)
                progress(min(int(staged), int(total)), int(total))


def reembed(
    store: StoreAccess, target: ModelInfo, embed: EmbedFn, progress: ProgressFn | None, force: bool
) -> ReembedReport:
    """Re-embed every memory with ``target`` and make it the store's model (module docstring).
    Does nothing when the store already uses ``target`` and nothing is staged, unless ``force``."""
    s, wanted = store.s, json.dumps(asdict(target))
    rows = store.key_values()
    if not force and meta.model_of(rows) == target and meta.REEMBED_KEY not in rows:
        return ReembedReport(0, 0, swapped=False)
    with store.session.transaction(writes=True) as cursor:
        if rows.get(meta.REEMBED_KEY) != wanted:
            cursor.execute(f"DELETE FROM {s}.vectors_next")
            meta.write_meta(cursor, s, {meta.REEMBED_KEY: wanted})
        cursor.execute(f"SELECT count(DISTINCT memory_id) FROM {s}.vectors_next")
        resumed = int(one_value(cursor))
    embedded = _stage(store, embed, target.dim, progress, locked=False)
    with store.session.transaction(timeout_ms=0, writes=True) as cursor:
        store.lock(cursor, exclusive=True)
        embedded += _stage(store, embed, target.dim, None, locked=True)  # added or edited meanwhile
        cursor.execute(f"DROP INDEX IF EXISTS {s}.{meta.HNSW_INDEX}")  # it is of the old dimension
        cursor.execute(f"DELETE FROM {s}.vectors")
        cursor.execute(
            f"INSERT INTO {s}.vectors (memory_id, window_no, embedding) SELECT memory_id, window_no, "
            f"embedding FROM {s}.vectors_next ORDER BY memory_id, window_no"
        )
        cursor.execute(f"DELETE FROM {s}.vectors_next")
        cursor.execute(f"DELETE FROM {s}.store_meta WHERE key = %s", (meta.REEMBED_KEY,))
        meta.write_meta(cursor, s, meta.model_rows(target))
        settings = meta.IndexSettings.of(meta.read_meta(cursor, s))
    # Searches run exact scans until the new model's index is built (doctor/reindex finish it if cut).
    meta.rebuild_hnsw(store.session, s, target.dim, settings)
    return ReembedReport(embedded, resumed, swapped=True)
