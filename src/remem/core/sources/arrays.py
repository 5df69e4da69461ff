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
#: How deep a conversation may nest (a real export's are about 10 deep; tool inputs a little more).
MAX_DEPTH = 512


def conversations(path: Path, given: str, source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, conversation) for each object of the JSON array in ``path`` (``given`` names it in
    an error); InvalidInputError, naming the file and where, for input that is not a JSON array
    of objects, that ends early (a truncated file) or that nests deeper than ``MAX_DEPTH``."""
    import ijson  # noqa: PLC0415 - only an import of a chat export loads it

    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InvalidInputError(f"{given}: cannot read: {exc.strerror or exc}") from None
    with handle:
        _check_array(handle.read(_SNIFF), given, source)
        handle.seek(0)
        index = 0
        try:
            for item in _items(ijson.basic_parse(handle, use_float=True), given):
                if not isinstance(item, dict):
                    raise InvalidInputError(f"{given}: [{index}] is not an object: not a {source} export")
                yield index, item
                index += 1
        except ijson.JSONError as exc:
            raise InvalidInputError(
                f"{given}: not valid JSON in conversation [{index}]: {_why(exc)}"
            ) from None
        except OSError as exc:
            raise InvalidInputError(f"{given}: cannot read: {exc.strerror or exc}") from None


def _items(events: Iterator[tuple[str, Any]], given: str) -> Iterator[Any]:
    """The values of the top-level array, built from ijson's events one at a time. Built here
    rather than by ``ijson.items``, whose path prefixes grow with the nesting (a 100 KB file of
    ``[[[[…`` took gigabytes); here memory is bounded by the depth, itself at most MAX_DEPTH."""
    next(events)  # the array's start (``_check_array``)
    stack: list[Any] = []  # the containers being built, outermost first
    keys: list[Any] = []  # the key each open map is waiting to fill
    index = 0  # of the value being built
    for event, value in events:
        if event == "map_key":
            keys[-1] = value
            continue
        if event in ("end_map", "end_array"):
            if not stack:  # the array's end: the rest is read for what may follow it
                for _ in events:
                    pass
                return
            done = stack.pop()
            keys.pop()
            if not stack:
                yield done
                index += 1
            continue
        if event in ("start_map", "start_array"):
            if len(stack) >= MAX_DEPTH:
                raise InvalidInputError(f"{given}: conversation [{index}] nests more than {MAX_DEPTH} deep")
            container: Any = {} if event == "start_map" else []
            if stack:
                _put(stack[-1], keys[-1], container)
            stack.append(container)
            keys.append(None)
        elif stack:
            _put(stack[-1], keys[-1], value)
        else:
            yield value  # a value that is not an object (refused by the caller)
            index += 1


def _put(container: Any, key: Any, value: Any) -> None:
    """Put ``value`` into the map (at ``key``) or array being built."""
    if type(container) is dict:
        container[key] = value
    else:
        container.append(value)


def _check_array(head: bytes, given: str, source: str) -> None:
    """InvalidInputError unless ``head`` (the file's first bytes) begins a JSON array."""
    start = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if not start:
        raise InvalidInputError(f"{given}: empty; a {source} export's conversations.json is a JSON array")
    if head.startswith(b"PK\x03\x04"):
        raise InvalidInputError(
            f"{given}: a zip archive; unzip the {source} export and give its conversations.json"
        )
    if start[:1] != b"[":
        kind = "a JSON object or JSON Lines" if start[:1] == b"{" else "not JSON"
        raise InvalidInputError(
            f"{given}: {kind}, not the JSON array of conversations a {source} export's "
            "conversations.json holds"
        )


def _why(exc: Exception) -> str:
    """What ijson found wrong, in one short line (never the text it quotes from the file)."""
    raw = exc.args[0] if exc.args else ""
    said = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    first = (said.strip().splitlines() or [type(exc).__name__])[0].strip()
    if "premature EOF" in first or "Incomplete" in first:
        return "the file ends inside it (a truncated file?)"
    return first[:120]


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
