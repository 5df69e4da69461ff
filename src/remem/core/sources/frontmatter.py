"""A note's YAML front matter, read by a small strict subset of YAML (remem depends on no YAML
parser): between a first line ``---`` and the next ``---`` (or ``...``), lines ``key: value``
(a value in quotes or not, or a flow list ``[a, b]``) and ``key:`` followed by ``- item`` lines.
The lines indented under a ``key:`` that are not ``- item`` (a nested map, a block of text) are
passed over: their key has no value here. Anything else is not read: ``FrontMatterError`` names
its line, and the caller keeps the note whole, as text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_KEY = re.compile(r"^([A-Za-z0-9_][\w .-]*?)\s*:(?:\s+(.*?))?\s*$")
_ITEM = re.compile(r"^\s+-\s*(.*?)\s*$")
_OPEN, _CLOSE = "---", ("---", "...")

#: A value: a string, a list of strings, or None (nested, or empty).
Value = str | list[str] | None


class FrontMatterError(ValueError):
    """A front matter this module cannot read; ``line`` is its 1-based line in the note."""

    def __init__(self, line: int, why: str) -> None:
        super().__init__(f"line {line}: {why}")
        self.line = line


@dataclass(frozen=True)
class Note:
    """A note split into its front matter's values and the text after it."""

    fields: dict[str, Value]
    body: str


def split(text: str) -> Note:
    """The front matter's fields and the body of ``text``; no front matter: no fields, the whole
    text. FrontMatterError for one that is never closed or holds a line this subset does not read."""
    lines = text.split("\n")
    if lines[0].strip() != _OPEN:
        return Note({}, text)
    end = next((n for n in range(1, len(lines)) if lines[n].rstrip() in _CLOSE), None)
    if end is None:
        raise FrontMatterError(1, "the front matter opened here is never closed by ---")
    return Note(_fields(lines[1:end]), "\n".join(lines[end + 1 :]))


def _fields(lines: list[str]) -> dict[str, Value]:
    fields: dict[str, Value] = {}
    last: str | None = None
    nested: set[str] = set()
    for number, line in enumerate(lines, start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] not in " \t":
            found = _KEY.match(line)
            if found is None:
                raise FrontMatterError(number, "not a `key: value` line")
            last = found.group(1).strip().lower()
            fields[last] = _value(found.group(2) or "", number)
            continue
        if last is None or isinstance(fields[last], str):
            raise FrontMatterError(number, "an indented line under no key, or under a key that has a value")
        item = _ITEM.match(line)
        if item and last not in nested:
            fields[last] = [*(fields[last] or []), _scalar(item.group(1))]
        else:  # a nested map or a block of text: passed over
            fields[last] = None
            nested.add(last)
    return fields


def _value(raw: str, line: int) -> Value:
    if not raw:
        return None
    if raw.startswith("[") and raw.endswith("]"):
        return [_scalar(part) for part in raw[1:-1].split(",") if part.strip()]
    if raw[0] in "[{":  # YAML reads no plain value from here: a list or map never closed
        raise FrontMatterError(line, f"a {'list' if raw[0] == '[' else 'map'} that is never closed")
    return _scalar(raw)


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return raw.split(" #", 1)[0].strip()


def words(value: Value) -> list[str]:
    """A tags-like value as names: a list's items, or a string's comma- or space-separated words,
    without a leading ``#``."""
    parts = value if isinstance(value, list) else re.split(r"[,\s]+", value or "")
    return [part.strip().lstrip("#").strip() for part in parts if part.strip().lstrip("#").strip()]
