"""A JSON array of conversations (ChatGPT's and Claude's conversations.json), read one conversation
at a time with ijson: memory is bounded by the largest conversation, whatever the file's size."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from remem.errors import InvalidInputError
from remem.inputs import utc_timestamp
from remem.times import utc_iso

#: Bytes read before the first that is not white space, to tell a JSON array from other input.
_SNIFF = 4096


def conversations(path: Path, given: str, source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, conversation) for each object of the JSON array in ``path`` (``given`` names it in
    an error); InvalidInputError, naming the file and where, for input that is not a JSON array
    of objects or that ends early (a truncated file)."""
    import ijson  # noqa: PLC0415 - only an import of a chat export loads it

    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InvalidInputError(f"{given}: cannot read: {exc.strerror or exc}") from None
    with handle:
        _check_array(handle.read(_SNIFF), given, source)
        handle.seek(0)
        index = -1
        try:
            for index, item in enumerate(ijson.items(handle, "item", use_float=True)):
                if not isinstance(item, dict):
                    raise InvalidInputError(f"{given}: [{index}] is not an object: not a {source} export")
                yield index, item
        except ijson.JSONError as exc:
            raise InvalidInputError(
                f"{given}: not valid JSON in conversation [{index + 1}] (a truncated file?): "
                f"{_first_line(exc)}"
            ) from None
        except OSError as exc:
            raise InvalidInputError(f"{given}: cannot read: {exc.strerror or exc}") from None


def _check_array(head: bytes, given: str, source: str) -> None:
    """InvalidInputError unless ``head`` (the file's first bytes) begins a JSON array."""
    start = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if not start:
        raise InvalidInputError(f"{given}: empty; a {source} export's conversations.json is a JSON array")
    if start[:1] != b"[":
        kind = "a JSON object or JSON Lines" if start[:1] == b"{" else "not JSON"
        raise InvalidInputError(
            f"{given}: {kind}, not the JSON array of conversations a {source} export's "
            "conversations.json holds"
        )


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def epoch_time(value: Any) -> str | None:
    """A Unix time in seconds (ChatGPT's create_time) as remem stores times, or None if absent
    or not a number in range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return utc_iso(datetime.fromtimestamp(value, tz=timezone.utc))
    except (OverflowError, OSError, ValueError):
        return None


def iso_time(value: Any) -> str | None:
    """An ISO 8601 time (Claude's created_at) as remem stores times, or None if absent or bad."""
    try:
        return utc_timestamp(value, "created_at") if isinstance(value, str) else None
    except InvalidInputError:
        return None


def text(value: Any) -> str:
    """``value`` if it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def key(name: str) -> str:
    """A mapping key as written in a JSON path (``["abc"]``)."""
    return f"[{json.dumps(name, ensure_ascii=False)}]"
