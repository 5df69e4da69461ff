"""A list page of memories with a tag, read by walking the list's order when the tag is common.

SQLite keeps no statistics of how many memories hold a tag, so ``listing.page_query`` lets the tag
drive: it reads every memory holding the tag and sorts them, for any page — 230 ms for a tag on a
tenth of a million memories (bench/list_pages.py's 1M case), where the page needed a few hundred
rows. Here each branch of the page (``listing.branches``) instead walks its own newest ``WALK``
rows in the list's order (the index the tagless list reads) and checks the tags of each row; a
branch whose walk ends on the bound without filling the page (a tag held only by old memories)
takes the tag-driven statement after all. A tag held by fewer than ``WALK`` memories drives at
once: reading its holders costs less than the walk."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from typing import Any

from remem.backends import listing
from remem.types import Filters

#: The rows a branch walks per row of the page before the tags drive instead (at least
#: ``WALK_MIN``): enough for a tag held by one memory in ``WALK_PER_ROW`` (~3 %) among the newest;
#: a walk costs about 1 µs a row, reading a holder of the tag and sorting it about 2.3 µs.
WALK_PER_ROW = 32
WALK_MIN = 256
#: What a walk reads of each row: the list's order only.
_WALKED = "SELECT m.id, m.created_at FROM memories m"


def newest(
    conn: sqlite3.Connection,
    source: str,
    filters: Filters,
    after: tuple[str, int] | None,
    limit: int,
    dialect: listing.Dialect,
) -> list[Any]:
    """The rows of ``listing.page_query`` (same order, same rows), read as the module docstring says."""
    walk = max(WALK_MIN, WALK_PER_ROW * limit)
    if not _walkable(filters) or _fewest_holders(conn, filters.tags, walk) < walk:
        return conn.execute(*listing.page_query(source, filters, after, limit, dialect)).fetchall()
    rows: list[Any] = []
    for part in listing.branches(filters, after):
        rows.extend(_walked(conn, source, part, limit, walk, dialect))
    rows.sort(key=lambda row: (row[3], row[0]), reverse=True)  # created_at, id: ``source``'s columns
    return rows[:limit]


def _walkable(filters: Filters) -> bool:
    """Whether ``filters`` name tags, and nothing a walk would check row by row beside them: a
    walk reads the rows of one index in the list's order (the memories', a user's or a
    conversation's, within since/until); a role, metadata, a writer, or a user and a conversation
    at once could make it read every row to find its bound's worth (the tags then drive)."""
    checked = (filters.role, filters.written_by, filters.meta or None)
    both = filters.user is not None and filters.conversation is not None
    return bool(filters.tags) and all(value is None for value in checked) and not both


def _fewest_holders(conn: sqlite3.Connection, tags: tuple[str, ...], bound: int) -> int:
    """How many memories hold the rarest of ``tags``, counted up to ``bound``."""
    sql = "SELECT count(*) FROM (SELECT 1 FROM memory_tags WHERE tag = ? LIMIT ?)"
    return min(int(conn.execute(sql, (tag, bound)).fetchone()[0]) for tag in set(tags))


def _walked(
    conn: sqlite3.Connection,
    source: str,
    part: listing.Branch,
    limit: int,
    walk: int,
    dialect: listing.Dialect,
) -> list[Any]:
    """A branch's first ``limit`` rows: from its newest ``walk`` rows, tags checked per row; by the
    tag-driven statement when the walk ended on its bound short of ``limit`` rows."""
    untagged = replace(part, filters=replace(part.filters, tags=()))
    inner, params = listing.branch_query(_WALKED, untagged, walk, dialect)
    tags = sorted(set(part.filters.tags))
    marks = ", ".join("?" * len(tags))
    held = f"(SELECT count(*) FROM memory_tags t WHERE t.memory_id = w.id AND t.tag IN ({marks})) = ?"
    chosen = f"SELECT w.id FROM ({inner}) AS w WHERE {held} ORDER BY w.created_at DESC, w.id DESC LIMIT ?"
    sql = f"{source} WHERE m.id IN ({chosen}) {listing.ORDER}"
    rows = conn.execute(sql, [*params, *tags, len(tags), limit]).fetchall()
    if len(rows) == limit or _walk_length(conn, inner, params) < walk:
        return rows
    return conn.execute(*listing.branch_query(source, part, limit, dialect)).fetchall()


def _walk_length(conn: sqlite3.Connection, inner: str, params: list[Any]) -> int:
    """How many rows the walk ``inner`` reads (fewer than its bound: the branch has no more)."""
    return int(conn.execute(f"SELECT count(*) FROM ({inner})", params).fetchone()[0])
