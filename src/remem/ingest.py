"""Reading many memories at once: one per line, JSON Lines, or remem's own export (for import).

Parsing never stops at the first bad line: every line yields a memory or a ``LineError`` naming the
line number and the problem, so the caller can refuse the whole batch or skip the bad lines.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, BinaryIO

from remem.checks import MAX_GIVEN_ID
from remem.errors import InvalidInputError
from remem.inputs import MAX_TEXT_CHARS, clean_meta, clean_name, strip_text, utc_timestamp, within_limit
from remem.types import ModelInfo, NewMemory, text_sha256

_NAME_FIELDS = ("user", "conversation", "role")


@dataclass(frozen=True)
class LineError:
    """Why a line of input was not a memory (1-based line number); ``mentions``: the arguments its
    message names (``max_text_chars``), as ``RememError.mentions`` (a line's own fields are none)."""

    line: int
    message: str
    mentions: tuple[str, ...] = ()

    @classmethod
    def of(cls, line: int, error: InvalidInputError) -> LineError:
        """The line error ``error`` makes of line ``line``."""
        return cls(line, str(error), error.mentions)

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass(frozen=True)
class Entry:
    """A memory read from line ``line``; ``vector`` and ``model`` when an export carried them, and
    the id (in the export) of the memory that superseded it and when (``superseded_by``/``_at``)."""

    line: int
    memory: NewMemory
    vector: bytes | None = None
    model: ModelInfo | None = None
    superseded_by: int | None = None
    superseded_at: str | None = None


_LINE_END = re.compile(rb"\r\n|\r|\n")


def _split_lines(data: bytes) -> Iterator[bytes]:
    """``data.splitlines()`` one line at a time: a list of every line would be a second copy of
    the whole input (2.4 GB for an export of a million memories with vectors)."""
    start = 0
    for end in _LINE_END.finditer(data):
        yield data[start : end.start()]
        start = end.end()
    if start < len(data):
        yield data[start:]


def read_lines(stream: BinaryIO, block: int = 1 << 20) -> Iterator[bytes]:
    """The lines of a binary stream as ``_split_lines`` splits bytes (``\\r\\n``, ``\\r`` or
    ``\\n`` ends one), read ``block`` bytes at a time: an input of any size is never held whole."""
    pending = b""
    while chunk := stream.read(block):
        data, start = pending + chunk, 0
        for end in _LINE_END.finditer(data):
            if end.group() == b"\r" and end.end() == len(data):
                break  # maybe the first half of \r\n: decided with the next block
            yield data[start : end.start()]
            start = end.end()
        pending = data[start:]
    yield from _split_lines(pending)


def _lines(lines: Iterable[bytes]) -> Iterator[tuple[int, str | None]]:
    """(line number, text) for the non-blank ``lines`` (as ``read_lines`` gives them); text is None
    when the line is not UTF-8."""
    for number, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            yield number, None
            continue
        if strip_text(text):
            yield number, text


def line_entries(
    lines: Iterable[bytes], defaults: NewMemory, max_chars: int = MAX_TEXT_CHARS
) -> Iterator[Entry | LineError]:
    """One memory per non-blank line, each with the ``defaults``' user, tags, meta…: an entry or
    a line error (a line of more than ``max_chars`` characters, not UTF-8) per non-blank line of
    ``lines`` (from ``read_lines``), as they are read."""
    for number, text in _lines(lines):
        try:
            if text is None:
                raise InvalidInputError("not valid UTF-8")
            yield Entry(number, replace(defaults, text=within_limit(strip_text(text), max_chars)))
        except InvalidInputError as exc:
            yield LineError.of(number, exc)


def _timestamp(value: Any, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(f"{name} must be an ISO 8601 string")
    return utc_timestamp(value, name)


def _tags(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        raise InvalidInputError("tags must be a list of strings")
    return tuple(sorted({name for tag in value if (name := clean_name(tag, "a tag"))}))


def _meta(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise InvalidInputError("meta must be an object whose values are strings")
    return clean_meta(value)


def memory_from_object(record: Any, defaults: NewMemory, max_chars: int = MAX_TEXT_CHARS) -> NewMemory:
    """A memory from one JSON object (``text`` plus optional fields; the text at most ``max_chars``
    characters); InvalidInputError if malformed.

    Fields absent from the object come from ``defaults``; unknown fields are ignored.
    """
    if not isinstance(record, dict):
        raise InvalidInputError("not a JSON object")
    text = record.get("text")
    if not isinstance(text, str):
        raise InvalidInputError("missing text" if text is None else "text must be a string")
    if not strip_text(text):
        raise InvalidInputError("text is empty")
    user, conversation, role = (_name(record, name, getattr(defaults, name)) for name in _NAME_FIELDS)
    return replace(
        defaults,
        text=within_limit(strip_text(text), max_chars),
        user=user,
        conversation=conversation,
        role=role,
        tags=_tags(record["tags"]) if "tags" in record else defaults.tags,
        meta=_meta(record["meta"]) if "meta" in record else defaults.meta,
        created_at=_timestamp(record.get("created_at"), "created_at"),
        expires_at=_timestamp(record["expires_at"], "expires_at")
        if "expires_at" in record
        else defaults.expires_at,
    )


def _name(record: Mapping[str, Any], name: str, default: str | None) -> str | None:
    value = record.get(name, default)
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string or null")
    return clean_name(value, name)


def decode_json(text: str) -> Any:
    """One line's JSON value; InvalidInputError for invalid JSON, including what Python's parser
    refuses beyond the syntax (integers of thousands of digits, arrays nested thousands deep)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"invalid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise InvalidInputError("invalid JSON (nested too deeply)") from None
    except ValueError:  # "Exceeds the limit (4300 digits) for integer string conversion"
        raise InvalidInputError("invalid JSON (a number too long to read)") from None


def jsonl_entries(
    lines: Iterable[bytes], defaults: NewMemory, max_chars: int = MAX_TEXT_CHARS
) -> Iterator[Entry | LineError]:
    """One memory per non-blank line, each a JSON object (see ``memory_from_object``), as a
    stream (as ``line_entries``)."""
    for number, text in _lines(lines):
        try:
            if text is None:
                raise InvalidInputError("not valid UTF-8")
            yield Entry(number, memory_from_object(decode_json(text), defaults, max_chars))
        except InvalidInputError as exc:
            yield LineError.of(number, exc)


def _vector(record: Mapping[str, Any]) -> tuple[bytes | None, ModelInfo | None]:
    carried = record.get("vector")
    if carried is None:
        return None, None
    try:
        model = ModelInfo(**carried["model"])
        data = base64.b64decode(carried["float32_base64"], validate=True)
        windows = carried.get("windows", 1)
    except (KeyError, TypeError, AttributeError, binascii.Error):
        raise InvalidInputError("vector must be {model: {...}, windows: N, float32_base64: ...}") from None
    if not isinstance(windows, int) or isinstance(windows, bool) or windows < 1:
        raise InvalidInputError("vector windows must be a positive integer")
    if len(data) != 4 * model.dim * windows:
        raise InvalidInputError(
            f"vector has {len(data) // 4} values; {windows} window(s) of its model make {windows * model.dim}"
        )
    return data, model


#: Who wrote an imported record that does not say (an export made before remem recorded it).
IMPORT_WRITER = "import"


def export_entry(record: Any, line: int, max_chars: int = MAX_TEXT_CHARS) -> Entry:
    """One record of remem's export (a decoded JSON object) as an entry; InvalidInputError if bad."""
    memory = memory_from_object(record, NewMemory(text=""), max_chars)
    if record.get("sha256") not in (None, text_sha256(memory.text)):
        raise InvalidInputError("sha256 does not match the text")
    memory_id = record.get("id")
    if memory_id is not None and (
        not isinstance(memory_id, int) or isinstance(memory_id, bool) or not 1 <= memory_id <= MAX_GIVEN_ID
    ):
        raise InvalidInputError(f"id must be a positive integer up to {MAX_GIVEN_ID}")
    updated = _timestamp(record.get("updated_at"), "updated_at")
    vector, model = _vector(record)
    by = record.get("superseded_by")
    if by is not None and (not isinstance(by, int) or isinstance(by, bool) or not 1 <= by <= MAX_GIVEN_ID):
        raise InvalidInputError(f"superseded_by must be a positive integer up to {MAX_GIVEN_ID} or null")
    at = _timestamp(record.get("superseded_at"), "superseded_at")
    writer = _name(record, "written_by", IMPORT_WRITER)  # travels with it; null: unknown
    return Entry(
        line, replace(memory, id=memory_id, updated_at=updated, written_by=writer), vector, model, by, at
    )


def export_entries(lines: Iterable[bytes], max_chars: int = MAX_TEXT_CHARS) -> Iterator[Entry | LineError]:
    """remem's JSONL export as a stream (as ``line_entries``): every field kept (id, timestamps),
    sha256 checked, vectors decoded; texts of at most ``max_chars`` characters."""
    for number, text in _lines(lines):
        try:
            if text is None:
                raise InvalidInputError("not valid UTF-8")
            yield export_entry(decode_json(text), number, max_chars)
        except InvalidInputError as exc:
            yield LineError.of(number, exc)
