"""Changing stored memories in place: an edit (text, context, vectors), new tags or meta, and new
contexts."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from remem.backends.local import fts
from remem.backends.shapes import windows_of
from remem.errors import EditConflictError, InvalidInputError, MemoryNotFoundError
from remem.types import Memory, ModelInfo, text_sha256, utc_now_iso

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.local.home import Writing


def edit(
    writing: Writing,
    memory_id: int,
    text: str,
    vectors: FloatArray,
    model: ModelInfo,
    expected_sha256: str | None,
    context: str,
) -> Memory:
    """Replace a memory's text, context and vector(s) in one ``writing`` transaction, keeping its id and
    created_at; records updated_at.

    Raises MemoryNotFoundError if there is no such memory, InvalidInputError if the same
    user/conversation already holds that text in another memory, EditConflictError if its text
    no longer hashes to ``expected_sha256`` (when given).
    """
    (rows,) = windows_of([vectors], 1, model.dim)
    with writing(model) as (index, records):
        current = records.get_many([memory_id]).get(memory_id)
        if current is not None and expected_sha256 not in (None, current.sha256):
            raise EditConflictError(f"memory {memory_id} was changed by another edit meanwhile; retry")
        old = [vid for vid, _ in records.vectors_of_memories([memory_id]).get(memory_id, [])]
        blobs = [row.astype("<f4").tobytes() for row in rows]
        try:
            found = records.replace_text(memory_id, text, blobs, utc_now_iso(), context)
        except sqlite3.IntegrityError:
            raise InvalidInputError(
                "another memory of the same user/conversation already holds this text"
            ) from None
        if not found:
            raise MemoryNotFoundError([memory_id])
        index.remove(old)
        index.add([vid for vid, _ in records.vectors_of_memories([memory_id])[memory_id]], rows)
    return records.get_many([memory_id])[memory_id]


#: What a refile replaces: tags, meta, owner (``Backend.refile``'s arguments; None: kept).
Refiling = tuple[Sequence[str] | None, Mapping[str, str] | None, tuple[str | None] | None]


def refile(writing: Writing, memory_id: int, change: Refiling, expected_sha256: str | None) -> Memory:
    """Replace a memory's tags, meta and/or user (``change``; None: kept) and its keyword terms in one
    ``writing`` transaction; records updated_at (``Backend.refile`` says what it raises)."""
    tags, meta, owner = change
    with writing(None) as (_, records):
        conn = records.conn
        row = conn.execute("SELECT sha256 FROM memories WHERE id = ?", (memory_id,)).fetchone()
        if row is None:
            raise MemoryNotFoundError([memory_id])
        if expected_sha256 not in (None, row[0]):
            raise EditConflictError(f"memory {memory_id} was changed by another edit meanwhile; retry")
        stored = None if meta is None else json.dumps(dict(meta), ensure_ascii=False, sort_keys=True)
        conn.execute(
            "UPDATE memories SET updated_at = ?, meta = coalesce(?, meta) WHERE id = ?",
            (utc_now_iso(), stored, memory_id),
        )
        if owner is not None:
            _move(conn, memory_id, owner[0])
        if tags is not None:
            conn.execute("DELETE FROM memory_tags WHERE memory_id = ?", (memory_id,))
            conn.executemany(
                "INSERT INTO memory_tags (memory_id, tag) VALUES (?, ?)",
                [(memory_id, tag) for tag in sorted(set(tags))],
            )
        if tags is not None or owner is not None:
            fts.rewrite_terms(conn, [memory_id])
    return records.get_many([memory_id])[memory_id]


def _move(conn: sqlite3.Connection, memory_id: int, user: str | None) -> None:
    """Give a memory another user (None: no user); InvalidInputError if that user holds its text."""
    try:
        conn.execute("UPDATE memories SET user = ? WHERE id = ?", (user, memory_id))
    except sqlite3.IntegrityError:
        raise InvalidInputError("the new user already holds this text in another memory") from None


def set_contexts(writing: Writing, items: Sequence[tuple[int, str, str]]) -> list[int]:
    """Give memories, as (id, text as read, context), new contexts (and keyword terms) in one
    ``writing`` transaction; a memory deleted or edited meanwhile, or with that context already, is skipped.
    Returns the ids changed."""
    with writing(None) as (_, records):
        conn = records.conn
        return [mid for mid, text, context in items if _set_context(conn, mid, text_sha256(text), context)]


def _set_context(conn: sqlite3.Connection, memory_id: int, sha256: str, context: str) -> bool:
    """Give a memory a new context (and keyword terms) if its text still hashes to ``sha256``;
    False (nothing written) otherwise, or when it has that context already."""
    cursor = conn.execute(
        "UPDATE memories SET context = ? WHERE id = ? AND sha256 = ? AND context != ?",
        (context, memory_id, sha256, context),
    )
    if cursor.rowcount == 0:
        return False
    fts.rewrite_terms(conn, [memory_id])
    return True
