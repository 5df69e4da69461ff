"""Filters as SQLite conditions: the local back-end's translation of ``remem.Filters``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from remem.types import Filters, utc_now_iso


def needs_memory_row(filters: Filters | None) -> bool:
    """True when the condition of ``where`` reads columns of the memory row (alias ``m``); else it
    needs only the memory's id, and a query can skip the lookup of each memory (tags, or nothing)."""
    filters = Filters().everything() if filters is None else filters
    fields = (
        filters.user,
        filters.conversation,
        filters.role,
        filters.since,
        filters.until,
        filters.written_by,
    )
    return any(value is not None for value in fields) or bool(filters.meta)


def where(
    filters: Filters | None, *, per_row: bool = False, memory_id: str = "m.id"
) -> tuple[str, list[Any]]:
    """A SQL condition on table alias ``m`` (``"1"`` when nothing is filtered) and its parameters;
    tags are checked against the column ``memory_id`` (another table's, when ``needs_memory_row`` is
    False and the query does not join the memories).

    ``per_row``: for checking given rows rather than listing those selected — tags are then looked
    up for each row (by the tag table's primary key) instead of every tagged memory being listed
    once per statement (10,000 of them for a tag on a tenth of 100,000 memories: 20 ms a check)."""
    filters = Filters().everything() if filters is None else filters
    clauses, params = columns(filters)
    if filters.written_by is not None:  # no index of its own: checked on the rows the others select
        clauses.append("m.written_by = ?")
        params.append(filters.written_by)
    tags = sorted(set(filters.tags))
    if tags and per_row:
        clauses.append(
            "(SELECT count(*) FROM memory_tags t "
            f"WHERE t.memory_id = {memory_id} AND t.tag IN ({_marks(len(tags))})) = ?"
        )
        params.extend([*tags, len(tags)])
    elif tags:  # one condition for any number of tags (a chain of ANDs would hit SQLite's depth limit)
        clauses.append(
            f"{memory_id} IN (SELECT memory_id FROM memory_tags WHERE tag IN ({_marks(len(tags))}) "
            "GROUP BY memory_id HAVING count(DISTINCT tag) = ?)"
        )
        params.extend([*tags, len(tags)])
    pairs = sorted(set(filters.meta))
    if pairs:  # json_each, not a JSON path: any key (quotes, non-ASCII) works
        rows = ", ".join(["(?, ?)"] * len(pairs))
        clauses.append(
            "(SELECT count(*) FROM json_each(m.meta) AS j "
            f"WHERE j.type = 'text' AND (j.key, j.value) IN (VALUES {rows})) = ?"
        )
        params.extend([*(item for pair in pairs for item in pair), len(pairs)])
    if filters.since is not None:
        clauses.append("m.created_at >= ?")
        params.append(filters.since)
    if filters.until is not None:
        clauses.append("m.created_at < ?")
        params.append(filters.until)
    hidden, hidden_params = hiding(filters, memory_id)
    return (" AND ".join(clauses + hidden) or "1"), params + hidden_params


#: The memory row's columns a filter compares with a value, each with an index of its own.
COLUMNS = ("user", "conversation", "role")


def column(filters: Filters, name: str, indexed: bool = True) -> tuple[str, list[Any]]:
    """The condition on the memory row's column ``name`` (one of COLUMNS, named by the filters;
    alias ``m``) and its parameter; with ``indexed`` False written so that SQLite does not take
    its index (the unary +)."""
    ref = f"m.{name}" if indexed else f"+m.{name}"
    clause = f"{ref} = ?"
    if name == "user" and filters.shared:  # the user's and the team's: one user-index lookup each
        clause = f"({clause} OR {ref} IS NULL)"
    return clause, [getattr(filters, name)]


def failing(filters: Filters, name: str) -> list[tuple[str, list[Any]]]:
    """The conditions (alias ``m``) and their parameters that together select every memory failing
    ``column(filters, name)``: a smaller value, a larger one, and none at all unless the filters
    take the team's (``shared``, for the user). Each is a range of the column's index, so whether
    any memory fails is a few seeks, not a read of every row."""
    value = getattr(filters, name)
    ranges: list[tuple[str, list[Any]]] = [(f"m.{name} < ?", [value]), (f"m.{name} > ?", [value])]
    return ranges if name == "user" and filters.shared else [*ranges, (f"m.{name} IS NULL", [])]


def named(filters: Filters) -> list[str]:
    """Those of COLUMNS the filters compare with a value."""
    return [name for name in COLUMNS if getattr(filters, name) is not None]


def columns(filters: Filters, through: str | None = None) -> tuple[list[str], list[Any]]:
    """The conditions on the memory row's user, conversation and role (``column``) and their
    parameters; none when the filters name none of them. With ``through``, only that column's
    index may be taken (the others checked on the rows it finds)."""
    clauses: list[str] = []
    params: list[Any] = []
    for name in named(filters):
        clause, param = column(filters, name, through in (None, name))
        clauses.append(clause)
        params.extend(param)
    return clauses, params


def by_columns(filters: Filters) -> bool:
    """True when the only conditions ``where`` puts on the memory row are on its user,
    conversation and role (``columns``, at least one; not its writer): ``listed`` can then check a
    row by id."""
    return (
        bool(named(filters))
        and filters.since is None
        and filters.until is None
        and filters.written_by is None
        and not filters.meta
    )


def listed(filters: Filters, memory_id: str, through: str) -> tuple[str, list[Any]]:
    """``where(filters, per_row=True, memory_id=memory_id)`` for filters ``by_columns``, with the
    memories the row conditions select listed once per statement through the index of the column
    ``through`` (the unary + keeps FTS5 from a lookup per id), instead of each checked row's memory
    being read: for a filter selecting few memories (see ``fts.conditions``)."""
    clauses, params = columns(filters, through)
    rest, rest_params = where(
        replace(filters, user=None, conversation=None, role=None, shared=False),
        per_row=True,
        memory_id=memory_id,
    )
    inner = " AND ".join(clauses)
    return f"+{memory_id} IN (SELECT m.id FROM memories m WHERE {inner}) AND {rest}", params + rest_params


def hiding(filters: Filters, memory_id: str) -> tuple[list[str], list[Any]]:
    """The conditions that leave superseded and expired memories out (unless included): each a
    set of ids read once per statement through its partial index (none in most stores), so a
    query that never reads a memory's row (FTS5's matches, a vector's owner) need not read it."""
    queries, params = _hidden_queries(filters)
    return [f"{memory_id} NOT IN ({query})" for query in queries], params


def hidden_ids(filters: Filters) -> tuple[str, list[Any]]:
    """A query of the ids of the memories ``filters`` leave out as superseded or expired (none
    when it includes both)."""
    queries, params = _hidden_queries(filters)
    return (" UNION ".join(queries) or "SELECT NULL WHERE 0"), params


def _hidden_queries(filters: Filters) -> tuple[list[str], list[Any]]:
    """The queries of the ids of superseded and of expired memories that ``filters`` leave out,
    and their parameters (the current time, for expiry)."""
    queries: list[str] = []
    params: list[Any] = []
    if not filters.include_superseded:
        queries.append("SELECT id FROM memories WHERE superseded_by IS NOT NULL")
    if not filters.include_expired:
        queries.append("SELECT id FROM memories WHERE expires_at IS NOT NULL AND expires_at <= ?")
        params.append(utc_now_iso())
    return queries, params


def _marks(count: int) -> str:
    """``?, ?, …``: ``count`` placeholders."""
    return ", ".join(["?"] * count)
