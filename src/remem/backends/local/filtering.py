"""Filters as SQLite conditions: the local back-end's translation of ``remem.Filters``."""

from __future__ import annotations

from typing import Any

from remem.types import Filters


def where(filters: Filters | None) -> tuple[str, list[Any]]:
    """A SQL condition on table alias ``m`` (``"1"`` when nothing is filtered) and its parameters."""
    filters = filters or Filters()
    clauses: list[str] = []
    params: list[Any] = []
    for column in ("user", "conversation", "role"):
        value = getattr(filters, column)
        if value is not None:
            clauses.append(f"m.{column} = ?")
            params.append(value)
    for tag in sorted(set(filters.tags)):
        clauses.append("m.id IN (SELECT memory_id FROM memory_tags WHERE tag = ?)")
        params.append(tag)
    for key, value in filters.meta:  # json_each, not a JSON path: any key (quotes, non-ASCII) works
        clauses.append("EXISTS (SELECT 1 FROM json_each(m.meta) AS j WHERE j.key = ? AND j.value = ?)")
        params.extend([key, value])
    if filters.since is not None:
        clauses.append("m.created_at >= ?")
        params.append(filters.since)
    if filters.until is not None:
        clauses.append("m.created_at < ?")
        params.append(filters.until)
    return (" AND ".join(clauses) or "1"), params
