"""Checking what a caller passes to ``Memories``: texts, names, filters. Every problem is one
InvalidInputError; nothing was changed when it is raised."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from remem.errors import InvalidInputError
from remem.inputs import clean_name, clean_tags, strip_text, utc_timestamp
from remem.types import Filters, NewMemory

E = TypeVar("E", bound=Enum)
_FILTER_KEYWORDS = ("user", "conversation", "role", "tags", "meta", "since", "until")


def text(value: str, what: str = "memory text") -> str:
    """A memory's or query's text without surrounding whitespace; never empty."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string")
    stripped = strip_text(value)
    if not stripped:
        raise InvalidInputError(f"{what} is empty")
    return stripped


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
) -> NewMemory:
    """A validated memory to add."""
    if isinstance(tags, str):
        raise InvalidInputError("tags must be a sequence of strings, not one string")
    return checked(
        NewMemory(body, user, conversation, role, tuple(tags), dict(meta or {}), timestamp(created_at))
    )


def checked(memory: NewMemory) -> NewMemory:
    """``memory`` with its text stripped and its names and tags cleaned; InvalidInputError if bad."""
    if isinstance(memory.tags, str):
        raise InvalidInputError("tags must be a sequence of strings, not one string")
    meta = dict(memory.meta)
    for key, value in meta.items():
        if not isinstance(key, str) or not key.strip() or not isinstance(value, str):
            raise InvalidInputError("meta must map non-empty string keys to string values")
    return replace(
        memory,
        text=text(memory.text),
        user=clean_name(memory.user, "--user"),
        conversation=clean_name(memory.conversation, "--conversation"),
        role=clean_name(memory.role, "--role"),
        tags=clean_tags(memory.tags),
        meta=meta,
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


def choice(kind: type[E], value: E | str, what: str) -> E:
    """``value`` as a member of the enum ``kind``; InvalidInputError naming the choices."""
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(str(member.value) for member in kind)
        raise InvalidInputError(f"{what} must be one of {choices}, not {value!r}") from None
