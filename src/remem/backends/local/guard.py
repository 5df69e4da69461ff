"""SQLite's errors as remem's: what escapes the local back-end is a RememError with one line that
says what to do, and never holds a memory's text (SQLite quotes undecodable text in its message)."""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import sqlite3
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, TypeVar

from remem.errors import InvalidInputError, RememError, StoreClosedError, StoreCorruptError, StoreError

C = TypeVar("C", bound=type)
_DATABASE_ERRORS = (sqlite3.Error, json.JSONDecodeError)
DOCTOR_HINT = "; `remem doctor` checks it"
_TOO_BIG = (
    "too many sql variables",
    "expression tree is too large",
    "too many terms",
    "string or blob too big",
)


def store_error(exc: sqlite3.Error | ValueError, where: Path | str | None) -> RememError:
    """The remem error for an SQLite error (or undecodable JSON read back) in the store ``where``."""
    store = f"the store at {where}" if where else "the store"
    name = str(getattr(exc, "sqlite_errorname", ""))
    text = damage(exc)
    lowered = text.lower()
    if isinstance(exc, sqlite3.ProgrammingError) and "closed database" in lowered:
        return StoreClosedError(str(where or "?"))  # an unfinished read went on after close
    if "locked" in lowered or name.startswith("SQLITE_BUSY"):
        return StoreError(f"{store} is locked by another process; retry")
    if name.startswith("SQLITE_FULL") or "disk is full" in lowered or _full_disk(name, lowered, where):
        return StoreError(f"the disk holding {store} is full; free some space and retry")
    if name.startswith("SQLITE_READONLY") or "readonly" in lowered:
        return StoreError(f"{store} is read-only; it can be read, not changed")
    if any(phrase in lowered for phrase in _TOO_BIG):
        return InvalidInputError(f"too many filters or search terms for the database ({text})")
    return StoreCorruptError(f"the database of {store} is damaged ({damage(exc)}){DOCTOR_HINT}")


def _full_disk(name: str, lowered: str, where: Path | str | None) -> bool:
    """An I/O error where the disk has no space left (SQLite says "disk I/O error" when it cannot
    grow its -shm or -wal file): the disk is full, the database is not damaged."""
    if where is None or not (name.startswith("SQLITE_IOERR") or "disk i/o error" in lowered):
        return False
    try:
        return shutil.disk_usage(where).free == 0  # what users other than root may use
    except OSError:
        return False


def damage(exc: sqlite3.Error | ValueError) -> str:
    """SQLite's description of damage, without the text it quotes (it may be a memory's)."""
    text = str(exc)
    if isinstance(exc, ValueError) or text.lower().startswith("could not decode"):
        return "a stored value is not valid text"
    return text


def _translated(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        where = getattr(self, "directory", None)
        try:
            result = method(self, *args, **kwargs)
        except _DATABASE_ERRORS as exc:
            raise store_error(exc, where) from exc
        if isinstance(result, contextlib.ContextDecorator):  # @contextmanager: snapshot(), writing()
            return _guarded_context(result, where)  # fail on entering or leaving the block too
        return _guarded_iterator(result, where) if isinstance(result, Generator) else result

    return call


@contextlib.contextmanager
def _guarded_context(manager: Any, where: Path | None) -> Iterator[Any]:
    try:
        with manager as value:
            yield value
    except _DATABASE_ERRORS as exc:
        raise store_error(exc, where) from exc


def _guarded_iterator(items: Iterator[Any], where: Path | None) -> Iterator[Any]:
    try:
        yield from items
    except _DATABASE_ERRORS as exc:
        raise store_error(exc, where) from exc


def translating(cls: C) -> C:
    """Make every public method and property of the back-end class ``cls`` raise remem's errors
    instead of SQLite's (see ``store_error``; messages name the instances' ``directory`` if any)."""
    for name, member in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(member, property) and member.fget is not None:
            setattr(cls, name, property(_translated(member.fget), member.fset, member.fdel, member.__doc__))
        elif callable(member) and not isinstance(member, (classmethod, staticmethod, type)):
            setattr(cls, name, _translated(member))
    return cls
