"""Parsing and validating what users type or pipe in; every problem is an InvalidInputError."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import BinaryIO

from remem.errors import InvalidInputError

STDIN_MARKER = "-"


def read_text(words: Sequence[str] | None, stdin: BinaryIO, what: str = "memory text") -> str:
    """The text of a memory or query: the words joined by spaces, or all of stdin for ``-``.

    Leading and trailing whitespace is removed. Raises InvalidInputError for empty text or
    stdin that is not UTF-8.
    """
    words = list(words or [])
    if words == [STDIN_MARKER]:
        raw = stdin.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                f"stdin is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
            ) from None
    else:
        text = " ".join(words)
    text = text.strip()
    if not text:
        source = "stdin" if words == [STDIN_MARKER] else "the arguments"
        raise InvalidInputError(f"{what} is empty (nothing but whitespace in {source})")
    return text


def clean_name(value: str | None, option: str) -> str | None:
    """An optional name (user, conversation, role, tag) without surrounding spaces; never empty."""
    if value is None:
        return None
    cleaned = value.strip()
    if not cleaned:
        raise InvalidInputError(f"{option} must not be empty")
    if any(unicodedata.category(char) == "Cc" for char in cleaned):
        raise InvalidInputError(f"{option} {cleaned!r} must not contain control characters (newlines, tabs…)")
    return cleaned


def clean_tags(tags: Sequence[str] | None) -> tuple[str, ...]:
    """Tags as given (repeatable option), stripped, deduplicated and sorted."""
    return tuple(sorted({name for tag in tags or () if (name := clean_name(tag, "--tag"))}))


def parse_meta(pairs: Sequence[str] | None) -> dict[str, str]:
    """``key=value`` strings as a dict (a repeated key keeps its last value; values may hold ``=``)."""
    meta: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep:
            raise InvalidInputError(f"--meta {pair!r} is not key=value")
        if not key.strip():
            raise InvalidInputError(f"--meta {pair!r} has an empty key")
        meta[key.strip()] = value
    return meta


def check_min_score(value: float | None) -> float | None:
    """A raw-cosine threshold in [-1, 1], or None."""
    if value is not None and not -1.0 <= value <= 1.0:  # also false for NaN
        raise InvalidInputError(f"--min-score must be between -1 and 1 (raw cosine), not {value}")
    return value
