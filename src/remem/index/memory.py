"""What a memory is, and which memories a command selects: plain data and the SQL that filters it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


@dataclass(frozen=True)
class ModelStamp:
    """The identity of the model whose vectors a store holds."""

    name: str
    dim: int
    pooling: str
    sha256: str


@dataclass(frozen=True)
class NewMemory:
    """A memory to add. Tags are deduplicated and sorted when stored; meta values are strings.

    ``created_at``/``updated_at`` (UTC ISO 8601) default to now/None; ``id`` is kept when importing
    if no memory ever had it, else a new id is given.
    """

    text: str
    user: str | None = None
    conversation: str | None = None
    role: str | None = None
    tags: tuple[str, ...] = ()
    meta: Mapping[str, str] = field(default_factory=dict)
    created_at: str | None = None
    updated_at: str | None = None
    id: int | None = None


@dataclass(frozen=True)
class Memory:
    """A stored memory (without its vectors). ``updated_at`` is set once the text was edited."""

    id: int
    text: str
    sha256: str
    created_at: str
    user: str | None
    conversation: str | None
    role: str | None
    tags: tuple[str, ...]
    meta: dict[str, str]
    updated_at: str | None = None


@dataclass(frozen=True)
class Filters:
    """Which memories a command looks at: every given field must match, all tags must be present,
    every meta pair must be present, and ``since`` ≤ created_at < ``until`` (UTC ISO 8601 strings).
    """

    user: str | None = None
    conversation: str | None = None
    role: str | None = None
    tags: tuple[str, ...] = ()
    meta: tuple[tuple[str, str], ...] = ()
    since: str | None = None
    until: str | None = None

    def is_empty(self) -> bool:
        """True when the filters select every memory."""
        return self == Filters()

    def where(self) -> tuple[str, list[Any]]:
        """A SQL condition on table alias ``m`` (``"1"`` when empty) and its parameters."""
        clauses: list[str] = []
        params: list[Any] = []
        for column in ("user", "conversation", "role"):
            value = getattr(self, column)
            if value is not None:
                clauses.append(f"m.{column} = ?")
                params.append(value)
        for tag in sorted(set(self.tags)):
            clauses.append("m.id IN (SELECT memory_id FROM memory_tags WHERE tag = ?)")
            params.append(tag)
        for key, value in self.meta:
            clauses.append("json_extract(m.meta, ?) = ?")
            params.extend([f"$.{json.dumps(key)}", value])
        if self.since is not None:
            clauses.append("m.created_at >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append("m.created_at < ?")
            params.append(self.until)
        return (" AND ".join(clauses) or "1"), params


def text_sha256(text: str) -> str:
    """Hex sha256 of the UTF-8 bytes of a memory's text (the deduplication key)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def utc_iso(moment: datetime) -> str:
    """A timezone-aware time as UTC ISO 8601 with milliseconds and a trailing Z (sorts as text)."""
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utc_now_iso() -> str:
    """The current time in UTC as ISO 8601 with milliseconds and a trailing Z."""
    return utc_iso(datetime.now(timezone.utc))
