"""memory_list's pages: newest first, and a cursor that is a position, not an offset.

The cursor names the last memory returned by its (created_at, id) — the list's order — so a page
starts right after it whatever was added or forgotten meanwhile: every memory that stays is listed
exactly once. ``Filters`` can only say "created before", so a page asks for memories created up to
the cursor's millisecond (a text bound: the order is the text's) and drops those at or before the
cursor's place; the cursor also counts the
memories of that millisecond already listed, which is how many extra to fetch (a store written
meanwhile can need more, and then more are fetched).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, replace
from datetime import timedelta

import remem
from remem.errors import InvalidInputError
from remem.inputs import parse_iso

#: A cursor's count of ties is a hint (how many more to fetch); a larger one is not believed.
MAX_TIES = 10_000
#: The largest memory id (a signed 64-bit integer on both back-ends).
MAX_ID = 2**63 - 1
#: The longest created_at a cursor may name (remem writes 24 characters).
MAX_TIME_CHARS = 64
NOT_A_CURSOR = "cursor is not a next_cursor from memory_list"


@dataclass(frozen=True)
class Position:
    """Where a page ended: the last memory's created_at and id, and how many listed memories
    share that created_at."""

    created_at: str
    id: int
    ties: int

    def encode(self) -> str:
        """The opaque cursor string."""
        raw = json.dumps([self.created_at, self.id, self.ties], separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, cursor: str) -> Position:
        """The position a cursor names; InvalidInputError (``NOT_A_CURSOR``) for any string that is
        not one of ours: its created_at an ISO 8601 time, its id and count of ties whole numbers."""
        try:
            raw = base64.urlsafe_b64decode(cursor.encode("ascii") + b"=" * (-len(cursor) % 4))
            created_at, memory_id, ties = json.loads(raw)
            if _is_time(created_at) and _is_whole(memory_id, 1, MAX_ID) and _is_whole(ties, 0, None):
                return cls(created_at, memory_id, min(ties, MAX_TIES))
        except (ValueError, TypeError, RecursionError):  # UnicodeError and binascii.Error are ValueErrors
            pass
        raise InvalidInputError(NOT_A_CURSOR)

    def before(self, memory: remem.Memory) -> bool:
        """Whether ``memory`` comes after this position in the list (older, or as old with a lower id)."""
        return (memory.created_at, memory.id) < (self.created_at, self.id)


def page(
    memories: remem.Memories, where: remem.Filters, limit: int, cursor: str | None
) -> tuple[list[remem.Memory], str | None]:
    """Up to ``limit`` memories ``where`` selects, newest first, after ``cursor``; and the cursor
    of the next page (None when this is the last)."""
    if cursor is None:
        rows = memories.list(limit=limit + 1, where=where)
        return _cut(rows, limit, None)
    position = Position.decode(cursor)
    where = _up_to(where, position.created_at)
    fetch = limit + position.ties + 1
    while True:
        rows = memories.list(limit=fetch, where=where)
        after = [memory for memory in rows if position.before(memory)]
        if len(after) > limit or len(rows) < fetch:
            return _cut(after, limit, position)
        fetch *= 2


def _cut(
    rows: list[remem.Memory], limit: int, previous: Position | None
) -> tuple[list[remem.Memory], str | None]:
    shown = rows[:limit]
    if len(rows) <= limit:
        return shown, None
    last = shown[-1]
    ties = sum(1 for memory in shown if memory.created_at == last.created_at)
    if previous is not None and previous.created_at == last.created_at:
        ties += previous.ties
    return shown, Position(last.created_at, last.id, ties).encode()


def _is_time(value: object) -> bool:
    """Whether a cursor's created_at is an ISO 8601 time a store can be asked about."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_TIME_CHARS or not value.isprintable():
        return False
    value.encode("utf-8")  # UnicodeEncodeError (a ValueError) for a lone surrogate
    return parse_iso(value) is not None


def _is_whole(value: object, low: int, high: int | None) -> bool:
    """Whether ``value`` is an int (not a bool, not a float) in ``low``..``high``."""
    return type(value) is int and low <= value and (high is None or value <= high)


def _up_to(where: remem.Filters, created_at: str) -> remem.Filters:
    """``where`` narrowed to memories created at or before ``created_at``: until the next
    millisecond; unchanged for a created_at not in remem's own format (which sorts differently as
    text) or at the end of the calendar — the caller drops what is above the cursor anyway."""
    moment = parse_iso(created_at)
    try:
        bound = None if moment is None else remem.Filters.of(until=moment + timedelta(milliseconds=1)).until
    except (OverflowError, ValueError, InvalidInputError):  # at 9999-12-31T23:59:59.999Z, or beyond
        bound = None
    if bound is None or bound <= created_at:
        return where
    until = bound if where.until is None else min(where.until, bound)
    return replace(where, until=until)
