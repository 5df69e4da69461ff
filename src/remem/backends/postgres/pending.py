"""Memories stored before they are embedded ("pending"): found by keyword at once, given their
vectors later. A pending memory has no vector rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from remem.backends.postgres import records
from remem.backends.postgres.rows import one_value
from remem.backends.shapes import windows_of
from remem.types import ModelInfo, text_sha256

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.postgres.access import StoreAccess

_PENDING = "FROM {s}.memories m WHERE NOT EXISTS (SELECT 1 FROM {s}.vectors v WHERE v.memory_id = m.id)"


def waiting(store: StoreAccess, limit: int) -> list[tuple[int, str]]:
    """Up to ``limit`` (id, text) of memories without vectors, oldest id first."""
    with store.session.transaction() as cursor:
        cursor.execute(f"SELECT m.id, m.text {_PENDING.format(s=store.s)} ORDER BY m.id LIMIT %s", (limit,))
        return [(int(i), str(t)) for i, t in cursor.fetchall()]


def count(store: StoreAccess) -> int:
    """How many memories wait for their vectors."""
    with store.session.transaction() as cursor:
        cursor.execute(f"SELECT count(*) {_PENDING.format(s=store.s)}")
        return int(one_value(cursor))


def attach(
    store: StoreAccess, items: Sequence[tuple[int, str, FloatArray]], model: ModelInfo, *, replace: bool
) -> list[int]:
    """Give pending memories their (windows, dim) vectors, made from ``text``, in one transaction.

    A memory deleted, edited (its text differs) or embedded meanwhile (unless ``replace``: then its
    vectors are replaced) is skipped (its row is locked while checked); returns the ids that got
    vectors.
    """
    shaped = windows_of([rows for _, _, rows in items], len(items), model.dim)
    which = "FROM {s}.memories m WHERE TRUE" if replace else _PENDING
    done: list[int] = []
    with store.writing(model) as cursor:
        for (memory_id, text, _), rows in zip(items, shaped, strict=True):
            cursor.execute(
                f"SELECT m.sha256 {which.format(s=store.s)} AND m.id = %s FOR UPDATE", (memory_id,)
            )
            row = cursor.fetchone()
            if row is not None and row[0] == text_sha256(text):
                cursor.execute(f"DELETE FROM {store.s}.vectors WHERE memory_id = %s", (memory_id,))
                records.add_vectors(cursor, store.s, memory_id, rows)
                done.append(memory_id)
    return done
