"""The types of what a Python caller passes, checked in one place for every entry point
(``remem.open``, ``Memories``, ``Filters``, ``NewMemory``): a wrong type is a TypeError naming the
argument, raised before anything is read or changed. What a value of the right type may hold (an
empty name, a bad date) is checked by ``remem.inputs`` (InvalidInputError).

Only Python code can get a type wrong: the command line and the MCP server pass their arguments
already typed, and records read from files are checked as data (``remem.ingest``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from numbers import Integral, Real
from os import PathLike
from typing import Any, TypeVar

from remem.errors import InvalidInputError

T = TypeVar("T")
#: The largest id a memory may be given (``NewMemory.id``, an import's ids): exact in every JSON
#: reader (2^53 - 1), and far from the stores' 2^63 - 1, where a store could give no further id.
MAX_GIVEN_ID = 2**53 - 1


def _kind(value: object) -> str:
    return "None" if value is None else type(value).__name__


def wrong(name: str, wanted: str, value: object) -> TypeError:
    """The TypeError for ``value`` given as ``name`` where ``wanted`` was expected."""
    return TypeError(f"{name} must be {wanted}, not {_kind(value)}")


def string(value: object, name: str) -> str:
    """``value`` if it is a str; TypeError naming ``name`` otherwise."""
    if not isinstance(value, str):
        raise wrong(name, "a string", value)
    return value


def optional_string(value: object, name: str) -> str | None:
    """``value`` if it is a str or None; TypeError naming ``name`` otherwise."""
    if value is not None and not isinstance(value, str):
        raise wrong(name, "a string or None", value)
    return value


def flag(value: object, name: str) -> bool:
    """``value`` if it is a bool (not any truthy object: ``"no"`` is not False)."""
    if not isinstance(value, bool):
        raise wrong(name, "True or False", value)
    return value


def integer(value: object, name: str) -> int:
    """``value`` as an int if it is an integer (an int, a numpy integer; a bool is not a number here)."""
    if type(value) is int:
        return value
    if not isinstance(value, Integral) or isinstance(value, bool):
        raise wrong(name, "an integer", value)
    return int(value)


def optional_integer(value: object, name: str) -> int | None:
    """``value`` if it is None or an int (not a bool)."""
    return None if value is None else integer(value, name)


def optional_number(value: object, name: str) -> float | None:
    """``value`` as a float if it is a real number (int, float, a numpy scalar; not a bool), or None."""
    if value is None:
        return None
    if not isinstance(value, Real) or isinstance(value, bool):
        raise wrong(name, "a number or None", value)
    try:
        return float(value)
    except OverflowError:  # an int beyond any float
        raise InvalidInputError(f"{name} {value:.3g} is out of range", parameter=name) from None


def given_id(value: object, name: str = "id") -> int | None:
    """An id a memory is given (or None): an int from 1 to ``MAX_GIVEN_ID``; InvalidInputError for
    an int outside."""
    value = optional_integer(value, name)
    if value is not None and not 1 <= value <= MAX_GIVEN_ID:
        raise InvalidInputError(f"{name} must be from 1 to {MAX_GIVEN_ID}, not {value}", parameter=name)
    return value


def items(value: object, name: str, wanted: str) -> Iterable[Any]:
    """``value`` if it is a collection to iterate over: not a str or bytes (a sequence of
    characters), nor a mapping (its keys), nor a single object."""
    if type(value) in (list, tuple):  # the common case, without the slower checks of abstract types
        return value  # type: ignore[return-value]
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise wrong(name, wanted, value)
    return value


def strings(value: object, name: str) -> list[str]:
    """The strings of a list or tuple (any collection but a str); TypeError naming ``name``."""
    found = list(items(value, name, "a sequence of strings"))
    for item in found:
        if not isinstance(item, str):
            raise wrong(f"each of {name}", "a string", item)
    return found


def ids(value: object, name: str) -> list[int]:
    """The ints of a collection of memory ids; TypeError naming ``name`` for anything else."""
    return [
        integer(item, f"each of {name}") for item in items(value, name, "a collection of memory ids (int)")
    ]


def string_map(value: object, name: str) -> dict[str, str]:
    """A mapping of strings to strings as a new dict (None: empty); TypeError naming ``name``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise wrong(name, "a mapping of strings to strings", value)
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise TypeError(f"{name} must map strings to strings, not {_kind(key)} to {_kind(item)}")
    return dict(value)


def optional_path(value: object, name: str) -> str | PathLike[str] | None:
    """A directory given as a str or a path (os.PathLike), or None."""
    if value is not None and not isinstance(value, (str, PathLike)):
        raise wrong(name, "a str, a path or None", value)
    return value


def callback(value: T, name: str = "progress") -> T:
    """A function to call back (``progress``), or None."""
    if value is not None and not callable(value):
        raise wrong(name, "a function or None", value)
    return value


def instance(value: object, kind: type[T], name: str, wanted: str) -> T:
    """``value`` if it is a ``kind``; TypeError naming ``name`` (``wanted`` says what fits)."""
    if not isinstance(value, kind):
        raise wrong(name, wanted, value)
    return value


def optional_moment(value: object, name: str) -> str | datetime | None:
    """A moment given as an ISO 8601 string (or an age) or a datetime, or None."""
    if value is not None and not isinstance(value, (str, datetime)):
        raise wrong(name, "a string, a datetime or None", value)
    return value
