"""memory_list's pages: newest first, and a cursor that is a position, not an offset.

The cursor names the last memory returned by its (created_at, id) — the list's order — so a page
starts right after it whatever was added or forgotten meanwhile: every memory that stays is listed
exactly once. The store reads a page from that position through its index on (created_at, id), so
a page costs the same at any depth, however many memories share a created_at, and a cursor made by
hand costs no more than a real one.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import remem
from remem.errors import InvalidInputError
from remem.inputs import parse_iso

#: The largest memory id (a signed 64-bit integer on both back-ends).
MAX_ID = 2**63 - 1
#: The longest created_at a cursor may name (remem writes 24 characters).
MAX_TIME_CHARS = 64
NOT_A_CURSOR = "cursor is not a next_cursor from memory_list"


@dataclass(frozen=True)
class Position:
    """Where a page ended: the last memory's created_at and id."""

    created_at: str
    id: int

    def encode(self) -> str:
        """The opaque cursor string."""
        raw = json.dumps([self.created_at, self.id], separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, cursor: str) -> Position:
        """The position a cursor names; InvalidInputError (``NOT_A_CURSOR``) for any string that is
        not one of ours: exactly its created_at, an ISO 8601 time, and its id, a whole number."""
        try:
            raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"=" * (-len(cursor) % 4))
            created_at, memory_id = json.loads(raw)
            if _is_time(created_at) and _is_whole(memory_id, 1, MAX_ID):
                return cls(created_at, memory_id)
        except (ValueError, TypeError, RecursionError):  # UnicodeError and binascii.Error are ValueErrors
            pass
        raise InvalidInputError(NOT_A_CURSOR)


def page(
    memories: remem.Memories, where: remem.Filters, limit: int, cursor: str | None
) -> tuple[list[remem.Memory], str | None]:
    """Up to ``limit`` memories ``where`` selects, newest first, after ``cursor``; and the cursor
    of the next page (None when this is the last)."""
    after = None if cursor is None else Position.decode(cursor)
    rows = memories.list(
        limit=limit + 1, where=where, after=None if after is None else (after.created_at, after.id)
    )
    shown = rows[:limit]
    if len(rows) <= limit:
        return shown, None
    return shown, Position(shown[-1].created_at, shown[-1].id).encode()


def _is_time(value: object) -> bool:
    """Whether a cursor's created_at is an ISO 8601 time a store can be asked about."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_TIME_CHARS or not value.isprintable():
        return False
    value.encode("utf-8")  # UnicodeEncodeError (a ValueError) for a lone surrogate
    return parse_iso(value) is not None


def _is_whole(value: object, low: int, high: int | None) -> bool:
    """Whether ``value`` is an int (not a bool, not a float) in ``low``..``high``."""
    return type(value) is int and low <= value and (high is None or value <= high)
