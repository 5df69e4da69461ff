"""Memories stored before they are embedded ("pending"): found by keyword at once, given their
vectors later (``Memories.embed_pending``, ``remem reindex``). A pending memory has no vector rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from remem.backends.shapes import windows_of
from remem.types import AddResult, ModelInfo, NewMemory, text_sha256, utc_now_iso

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.local.home import Writing
    from remem.backends.local.records import Records

_PENDING = "FROM memories m WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.memory_id = m.id)"


def add_pending(writing: Writing, memories: Sequence[NewMemory], contexts: Sequence[str]) -> list[AddResult]:
    """Store memories (with their contexts) without vectors in one ``writing`` transaction;
    duplicates report the existing id."""
    with writing(None) as (_, records):
        created_at = utc_now_iso()
        return [
            records.add(memory, [], created_at, context)
            for memory, context in zip(memories, contexts, strict=True)
        ]


def pending(records: Records, limit: int) -> list[tuple[int, str]]:
    """Up to ``limit`` (id, text) of memories without vectors, oldest id first."""
    sql = f"SELECT m.id, m.text {_PENDING} ORDER BY m.id LIMIT ?"
    return [(int(i), str(t)) for i, t in records.conn.execute(sql, (limit,))]


def pending_count(records: Records) -> int:
    """How many memories wait for their vectors."""
    return int(records.conn.execute(f"SELECT count(*) {_PENDING}").fetchone()[0])


def attach(
    writing: Writing, items: Sequence[tuple[int, str, FloatArray]], model: ModelInfo, *, replace: bool
) -> list[int]:
    """Give pending memories their (windows, dim) vectors, made from ``text``, in one ``writing``
    transaction.

    A memory that was deleted, edited (its text differs) or embedded meanwhile (unless ``replace``:
    then its vectors are replaced) is skipped; returns the ids that got vectors.
    """
    done: list[int] = []
    shaped = windows_of([rows for _, _, rows in items], len(items), model.dim)
    which = "FROM memories m WHERE TRUE" if replace else _PENDING
    with writing(model) as (index, records):
        for (memory_id, text, _), rows in zip(items, shaped, strict=True):
            row = records.conn.execute(f"SELECT m.sha256 {which} AND m.id = ?", (memory_id,)).fetchone()
            if row is None or row[0] != text_sha256(text):
                continue
            old = [vid for vid, _ in records.vectors_of_memories([memory_id]).get(memory_id, [])]
            records.replace_vectors(memory_id, [r.astype("<f4").tobytes() for r in rows])
            index.remove(old)
            index.add([vid for vid, _ in records.vectors_of_memories([memory_id])[memory_id]], rows)
            done.append(memory_id)
    return done
