"""Filters as PostgreSQL conditions on alias ``m``: each one served by an index (b-tree on the keys
of user, conversation and role, and on created_at; GIN on the keys of the tags and on the metadata as
jsonb). A name's key is its SHA-256 (``schema.name_key``, stored beside it): names of any length are
indexed."""

from __future__ import annotations

import json
from typing import Any

from remem.types import Filters, utc_now_iso


def where(filters: Filters | None, s: str) -> tuple[str, list[Any]]:
    """A condition on ``m`` of the store in schema ``s`` (quoted; ``true`` when nothing is filtered)
    and its parameters, in order."""
    filters = Filters().everything() if filters is None else filters
    clauses: list[str] = []
    params: list[Any] = []
    for column in ("user", "conversation", "role"):
        value = getattr(filters, column)
        if value is not None:
            clauses.append(f"m.{column}_key = {s}.name_key(%s)")
            params.append(value)
    if filters.shared:  # and the team's: no user, so no key (a BitmapOr of two scans of the key's index)
        clauses[0] = f"({clauses[0]} OR m.user_key IS NULL)"
    if filters.written_by is not None:  # no index: the page lists a writer's newest along created_at
        clauses.append("m.written_by = %s")
        params.append(filters.written_by)
    if filters.tags:
        clauses.append(f"m.tag_keys @> {s}.name_keys(%s::text[])")
        params.append(sorted(set(filters.tags)))
    for key, value in filters.meta:  # containment on the jsonb form: any key, served by the GIN index
        clauses.append("m.meta::jsonb @> %s::jsonb")
        params.append(json.dumps({key: value}))
    if filters.since is not None:
        clauses.append("m.created_at >= %s")
        params.append(filters.since)
    if filters.until is not None:
        clauses.append("m.created_at < %s")
        params.append(filters.until)
    if not filters.include_superseded:
        clauses.append("m.superseded_by IS NULL")
    if not filters.include_expired:
        clauses.append("(m.expires_at IS NULL OR m.expires_at > %s)")
        params.append(utc_now_iso())
    return (" AND ".join(clauses) or "true"), params
