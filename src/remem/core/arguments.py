"""Checking what a caller passes to ``Memories``: texts, names, filters. Every problem is one
InvalidInputError; nothing was changed when it is raised."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar

from remem.errors import InvalidInputError
from remem.inputs import (
    MAX_TEXT_CHARS,
    clean_meta,
    clean_name,
    clean_tags,
    strip_text,
    utc_timestamp,
    within_limit,
)
from remem.types import Filters, NewMemory

if TYPE_CHECKING:
    from remem.ingest import Entry

E = TypeVar("E", bound=Enum)
#: The largest id any memory can have (SQLite's INTEGER, PostgreSQL's bigint).
MAX_STORED_ID = 2**63 - 1
#: More results than any store holds: a larger limit asks for all and is cut to this.
MAX_RESULTS = 2**31 - 1
_FILTER_KEYWORDS = ("user", "conversation", "role", "tags", "meta", "since", "until")


def text(value: str, what: str = "memory text", limit: int = MAX_TEXT_CHARS) -> str:
    """A memory's or query's text without surrounding whitespace; never empty, at most ``limit``
    characters."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string")
    stripped = strip_text(value)
    if not stripped:
        raise InvalidInputError(f"{what} is empty")
    return within_limit(stripped, limit, what)


def timestamp(value: str | datetime | None) -> str | None:
    """A created_at as UTC ISO 8601 (naive datetimes and strings without an offset are UTC)."""
    return utc_timestamp(value, "created_at")


def new_memory(
    body: str,
    user: str | None,
    conversation: str | None,
    role: str | None,
    tags: Sequence[str],
    meta: Mapping[str, str] | None,
    created_at: str | datetime | None,
    limit: int = MAX_TEXT_CHARS,
) -> NewMemory:
    """A validated memory to add (its text at most ``limit`` characters)."""
    if isinstance(tags, str):
        raise InvalidInputError("tags must be a sequence of strings, not one string")
    return checked(
        NewMemory(body, user, conversation, role, tuple(tags), dict(meta or {}), timestamp(created_at)),
        limit,
    )


def checked(memory: NewMemory, limit: int = MAX_TEXT_CHARS) -> NewMemory:
    """``memory`` with its text stripped (at most ``limit`` characters) and its names and tags
    cleaned; InvalidInputError if bad."""
    if isinstance(memory.tags, str):
        raise InvalidInputError("tags must be a sequence of strings, not one string")
    return replace(
        memory,
        text=text(memory.text, limit=limit),
        user=clean_name(memory.user, "--user"),
        conversation=clean_name(memory.conversation, "--conversation"),
        role=clean_name(memory.role, "--role"),
        tags=clean_tags(memory.tags),
        meta=clean_meta(memory.meta),
        created_at=timestamp(memory.created_at),
        updated_at=timestamp(memory.updated_at),
    )


def filters(where: Filters | None, keywords: Mapping[str, Any]) -> Filters:
    """``where``, or ``Filters.of(**keywords)``; not both. TypeError for an unknown keyword."""
    unknown = sorted(set(keywords) - set(_FILTER_KEYWORDS))
    if unknown:
        raise TypeError(f"unknown filter {unknown[0]!r} (filters: {', '.join(_FILTER_KEYWORDS)})")
    given = {key: value for key, value in keywords.items() if value is not None}
    if where is not None and given:
        raise InvalidInputError("give where=Filters(...) or filter keywords, not both")
    return where if where is not None else Filters.of(**given)


def entries_within(entries: Sequence[Entry], limit: int) -> None:
    """InvalidInputError naming the first entry whose text is longer than ``limit`` characters."""
    for entry in entries:
        try:
            within_limit(entry.memory.text, limit)
        except InvalidInputError as exc:
            raise InvalidInputError(f"line {entry.line}: {exc}; nothing was added") from None


def count(value: int, what: str, minimum: int = 0) -> int:
    """A number of results asked for: an int of at least ``minimum`` (InvalidInputError), cut to
    ``MAX_RESULTS``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInputError(f"{what} must be an integer")
    if value < minimum:
        raise InvalidInputError(f"{what} must be at least {minimum}")
    return min(value, MAX_RESULTS)


def stored_ids(ids: Iterable[int]) -> list[int]:
    """Of ``ids``, those that could name a memory (1 … 2^63 − 1); any other names none."""
    return [i for i in ids if isinstance(i, int) and 1 <= i <= MAX_STORED_ID]


def choice(kind: type[E], value: E | str, what: str) -> E:
    """``value`` as a member of the enum ``kind``; InvalidInputError naming the choices."""
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(str(member.value) for member in kind)
        raise InvalidInputError(f"{what} must be one of {choices}, not {value!r}") from None
