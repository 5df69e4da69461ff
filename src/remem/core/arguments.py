"""Checking what a caller passes to ``Memories``: texts, names, ids, numbers, filters. A wrong type
is a TypeError naming the argument (``remem.checks``), a bad value one InvalidInputError; nothing
was read or changed when either is raised."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import replace
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import remem.checks as checks  # noqa: PLR0402 - the layer rule reads `from remem import` as the public API
from remem.errors import InvalidInputError
from remem.inputs import (
    MAX_TEXT_CHARS,
    check_min_score,
    clean_meta,
    clean_name,
    clean_tags,
    expiry_iso,
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
_FILTER_KEYWORDS = (
    "user",
    "conversation",
    "role",
    "tags",
    "meta",
    "since",
    "until",
    "shared",
    "include_superseded",
    "include_expired",
)
#: A filter keyword left at this value (None for the others) is not given.
_DEFAULTS = {"shared": False, "include_superseded": False, "include_expired": False}


def text(value: str, what: str = "memory text", limit: int = MAX_TEXT_CHARS, name: str = "text") -> str:
    """A memory's or query's text (the argument ``name``) without surrounding whitespace; never
    empty, at most ``limit`` characters."""
    stripped = strip_text(checks.string(value, name), f"the {name}", name)
    if not stripped:
        raise InvalidInputError(f"{what} is empty", parameter=name)
    return within_limit(stripped, limit, what)


class Change(NamedTuple):
    """What an edit changes of a memory (None: kept as it is); ``owner`` is ``(user,)``, ``(None,)``
    for no user."""

    text: str | None
    tags: tuple[str, ...] | None
    meta: dict[str, str] | None
    owner: tuple[str | None] | None = None


def change(
    text_given: str | None,
    tags: Sequence[str] | None,
    meta: Mapping[str, str] | None,
    limit: int,
    owner: tuple[str | None, bool] = (None, False),
) -> Change:
    """An edit's new text (as ``text``), tags, meta and user (``owner``: a user, and whether to
    remove it), checked as ``add`` checks them; at least one given (else InvalidInputError)."""
    user = clean_name(checks.optional_string(owner[0], "user"), "user", "user")
    no_user = checks.flag(owner[1], "no_user")
    if user is not None and no_user:
        raise InvalidInputError("user and no_user exclude each other: give one", parameter="user")
    if text_given is None and tags is None and meta is None and user is None and not no_user:
        raise InvalidInputError("give a new text, tags or meta to change", parameter="text")
    return Change(
        None if text_given is None else text(text_given, limit=limit),
        None if tags is None else clean_tags(checks.strings(tags, "tags")),
        None if meta is None else clean_meta(checks.string_map(meta, "meta"), "meta", "meta"),
        (user,) if user is not None else (None,) if no_user else None,
    )


def timestamp(value: str | datetime | None) -> str | None:
    """A created_at as UTC ISO 8601 (naive datetimes and strings without an offset are UTC)."""
    return utc_timestamp(checks.optional_moment(value, "created_at"), "created_at", "created_at")


def new_memory(
    body: str,
    user: str | None,
    conversation: str | None,
    role: str | None,
    tags: Sequence[str],
    meta: Mapping[str, str] | None,
    created_at: str | datetime | None,
    limit: int = MAX_TEXT_CHARS,
    supersedes: int | None = None,
    expires_at: str | datetime | None = None,
    written_by: str | None = None,
) -> NewMemory:
    """A validated memory to add (its text at most ``limit`` characters), written by ``written_by``
    (a name, or None: unknown); ``expires_at`` a moment still to come (``30d``, an ISO date/time or
    a datetime: ``inputs.parse_expiry``)."""
    body, stamp = text(body, limit=limit), timestamp(created_at)
    tags = tuple(checks.strings(tags, "tags"))  # one string is no sequence of tags
    supersedes = checks.given_id(supersedes, "supersedes")
    expiry = expiry_iso(checks.optional_moment(expires_at, "expires_at"), "expires_at")
    return NewMemory(
        body,
        user,
        conversation,
        role,
        tags,
        {} if meta is None else meta,
        stamp,
        supersedes=supersedes,
        expires_at=expiry,
        written_by=written_by,
    )


def checked(memory: NewMemory, limit: int = MAX_TEXT_CHARS, writer: str | None = None) -> NewMemory:
    """``memory`` (its fields were checked when it was made) with its text stripped, never empty
    and at most ``limit`` characters, written by ``writer`` unless it names who."""
    who = writer if memory.written_by is None else memory.written_by
    return replace(memory, text=text(memory.text, limit=limit), written_by=who)


def memories_to_add(memories: Iterable[NewMemory | str], limit: int) -> Iterator[Entry]:
    """``Memories.add_many``'s memories (a text is a memory of its own) as checked entries numbered
    from 1, made as they are read; TypeError (at once when ``memories`` is no collection, else when
    reached) for anything else, InvalidInputError naming the first bad one."""
    from remem.ingest import Entry  # noqa: PLC0415 - lazy: `list` needs none of it

    items = checks.items(memories, "memories", "NewMemory objects or strings")

    def entries() -> Iterator[Entry]:
        for index, item in enumerate(items):
            if not isinstance(item, (NewMemory, str)):
                raise checks.wrong(f"memories[{index}]", "a NewMemory or a string", item)
            memory = NewMemory(item) if isinstance(item, str) else item
            try:
                yield Entry(index + 1, checked(memory, limit))
            except InvalidInputError as exc:
                raise within(exc, f"memories[{index}]: {exc}; nothing was added", "memories") from None

    return entries()


def filters(where: Filters | None, keywords: Mapping[str, Any]) -> Filters:
    """``where``, or ``Filters.of(**keywords)``; not both (a keyword left at its default, None or
    ``shared=False``, is not given). TypeError for an unknown keyword and for a ``where`` that is no
    Filters."""
    if where is not None:
        checks.instance(where, Filters, "where", "a Filters (Filters.of(...)) or None")
    unknown = sorted(set(keywords) - set(_FILTER_KEYWORDS))
    if unknown:
        raise TypeError(f"unknown filter {unknown[0]!r} (filters: {', '.join(_FILTER_KEYWORDS)})")
    given = {key: value for key, value in keywords.items() if value is not _DEFAULTS.get(key)}
    if where is not None and given:
        raise InvalidInputError("give where=Filters(...) or filter keywords, not both", parameter="where")
    return where if where is not None else Filters.of(**given)


def position(after: tuple[str, int] | None) -> tuple[str, int] | None:
    """``after`` checked: None, or a list position (created_at, id) — a string and an int — where
    any string compares as text (a created_at no memory has still names a place in the list)."""
    if after is None:
        return None
    if not isinstance(after, tuple) or len(after) != 2:
        raise TypeError("after must be a (created_at, id) tuple or None")
    created_at, memory_id = checks.string(after[0], "after[0]"), checks.integer(after[1], "after[1]")
    if not 1 <= memory_id <= MAX_STORED_ID or "\x00" in created_at:
        raise InvalidInputError("after must be a memory's (created_at, id)", parameter="after")
    return created_at, memory_id


def scoped(chosen: Filters, scope: Filters | None) -> Filters:
    """The filters ``chosen`` inside ``scope`` (a search's, ``Memories.search``): its user (with the
    shared memories only where both allow them) and conversation in force. InvalidInputError for a
    scope that selects by anything else, or filters naming another user or conversation."""
    if scope is None:
        return chosen
    checks.instance(scope, Filters, "scope", "a Filters (Filters.of(user=..., shared=...)) or None")
    if replace(scope, user=None, conversation=None, shared=False).everything() != Filters().everything():
        raise InvalidInputError("a scope selects by user, shared and conversation only", parameter="scope")
    for name in ("user", "conversation"):
        pinned, asked = getattr(scope, name), getattr(chosen, name)
        if pinned is not None and asked is not None and asked != pinned:
            raise InvalidInputError(f"the {name} filter lies outside the search's scope", parameter=name)
    shared = chosen.shared if scope.user is None else scope.shared and (chosen.user is None or chosen.shared)
    return replace(
        chosen,
        user=scope.user or chosen.user,
        conversation=scope.conversation or chosen.conversation,
        shared=shared,
    )


def entries_within(entries: Iterable[Entry], limit: int, writer: str | None = None) -> Iterator[Entry]:
    """The entries with their texts checked (``checked``) and written by ``writer`` unless they
    name who, as they are read; InvalidInputError
    naming the line of the first bad one, TypeError for what is not an Entry (at once when
    ``entries`` is no collection)."""
    from remem.ingest import Entry  # noqa: PLC0415

    items = checks.items(entries, "entries", "a sequence of remem.ingest.Entry")

    def good() -> Iterator[Entry]:
        for entry in items:
            checks.instance(entry, Entry, "each of entries", "a remem.ingest.Entry")
            try:
                yield replace(entry, memory=checked(entry.memory, limit, writer))
            except InvalidInputError as exc:
                raise within(exc, f"line {entry.line}: {exc}; nothing was added") from None

    return good()


def count(value: int, what: str, minimum: int = 0) -> int:
    """A number of results asked for: an int of at least ``minimum`` (InvalidInputError), cut to
    ``MAX_RESULTS``."""
    if (value := checks.integer(value, what)) < minimum:
        raise InvalidInputError(f"{what} must be at least {minimum}", parameter=what)
    return min(value, MAX_RESULTS)


def within(error: InvalidInputError, message: str, parameter: str | None = None) -> InvalidInputError:
    """``error`` about an item of an argument (``parameter`` when ``message`` names it), said as
    ``message``: the arguments its message mentions stay mentioned (the item's fields are none)."""
    return InvalidInputError(message, parameter=parameter, mentions=error.mentions)


def stored_ids(ids: Iterable[int]) -> list[int]:
    """Of ``ids`` (ints), those that could name a memory (1 … 2^63 − 1); any other names none."""
    return [i for i in ids if 1 <= i <= MAX_STORED_ID]


def sized(items: object, expected: int | None) -> int | None:
    """``expected`` when given, else how many ``items`` holds when it knows (a list; not a stream)."""
    if expected is not None or not isinstance(items, Sized):
        return expected
    return len(items)


def optional_count(value: int | None, what: str) -> int | None:
    """None (no limit) or ``count(value, what)``."""
    return None if value is None else count(value, what)


def min_score(value: float | None) -> float | None:
    """A relevance threshold in [0, 1] (InvalidInputError), or None; TypeError for a non-number."""
    return check_min_score(checks.optional_number(value, "min_score"))


def choice(kind: type[E], value: E | str, what: str) -> E:
    """``value`` as a member of the enum ``kind``; InvalidInputError naming the choices, TypeError
    for a value that is neither a ``kind`` nor a str."""
    if not isinstance(value, (kind, str)):
        raise checks.wrong(what, f"a {kind.__name__} or a string", value)
    try:
        return kind(value)
    except ValueError:
        choices = ", ".join(str(member.value) for member in kind)
        raise InvalidInputError(f"{what} must be one of {choices}, not {value!r}", parameter=what) from None


def to_forget(
    ids: Iterable[int] | None, where: Filters | None, dry_run: bool
) -> tuple[list[int] | None, Filters | None, bool]:
    """``forget``'s arguments checked: ids (ints) or a Filters with at least one filter, not both."""
    ids = None if ids is None else checks.ids(ids, "ids")
    where = None if where is None else filters(where, {})
    if (ids is None) == (where is None):
        raise InvalidInputError(
            "give ids, or where with filters (not both)", parameter="ids", mentions=("where",)
        )
    if where is not None and where.is_empty():
        raise InvalidInputError(
            "where needs at least one filter (to forget all, delete the store)", parameter="where"
        )
    return ids, where, checks.flag(dry_run, "dry_run")
