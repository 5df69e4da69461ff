"""Parsing and validating what users type or pipe in; every problem is an InvalidInputError."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, BinaryIO

from remem.errors import InvalidInputError
from remem.times import utc_iso

STDIN_MARKER = "-"
#: The longest text one memory (or query) may have by default, in characters: embedding time grows
#: with the length (every window of a long text is embedded). An option raises it, up to the ceiling.
MAX_TEXT_CHARS = 100_000
MAX_TEXT_CHARS_CEILING = 10_000_000
#: Invisible characters trimmed from both ends of a text with the whitespace: a byte-order mark
#: (an editor's or Windows' UTF-8 files), zero-width spaces and joiners, the word joiner.
_INVISIBLE_EDGES = "\ufeff\u200b\u200c\u200d\u2060\u180e"


def unicode_only(value: str, what: str, parameter: str | None = None) -> str:
    """``value`` if it can be stored as UTF-8 by every back-end; InvalidInputError for a lone
    surrogate (an escaped ``\\ud800`` in JSON, or bytes of an argument that were not UTF-8) and for
    the NUL character (PostgreSQL cannot store it: one rule for both back-ends). ``what`` names the
    value in the message; ``parameter`` is the argument it came from, if any (the error's)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{what} is not valid Unicode (a lone surrogate or a byte that is not UTF-8 at "
            f"character {exc.start + 1})",
            parameter=parameter,
        ) from None
    if "\x00" in value:
        at = value.index(chr(0)) + 1
        raise InvalidInputError(f"{what} holds a NUL character (at character {at})", parameter=parameter)
    return value


def strip_text(text: str, what: str = "the text", parameter: str | None = None) -> str:
    """A memory's or query's text without leading and trailing whitespace and invisible
    characters (a BOM, zero-width spaces); a text of nothing else becomes empty. InvalidInputError
    when it is not valid Unicode (``unicode_only``)."""
    stripped = unicode_only(text, what, parameter).strip()
    while stripped and (stripped[0] in _INVISIBLE_EDGES or stripped[-1] in _INVISIBLE_EDGES):
        stripped = stripped.strip(_INVISIBLE_EDGES).strip()
    return stripped


def text_limit(value: int) -> int:
    """A per-memory size limit as given (``max_text_chars``): 1 … ``MAX_TEXT_CHARS_CEILING``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TEXT_CHARS_CEILING:
        raise InvalidInputError(
            f"max_text_chars must be between 1 and {MAX_TEXT_CHARS_CEILING:,}, not {value!r}",
            parameter="max_text_chars",
        )
    return value


def within_limit(text: str, limit: int, what: str = "the text") -> str:
    """``text`` if it has at most ``limit`` characters (``text_limit``); InvalidInputError otherwise
    (for a memory's text, saying how to raise the limit)."""
    if len(text) > text_limit(limit):
        raise _over_limit(f"{what} has {len(text):,} characters, more than the limit of {limit:,}", what)
    return text


def _over_limit(message: str, what: str) -> InvalidInputError:
    """The error for a text over its limit: ``message``, and for a memory's text (not a query) how
    to raise the limit."""
    if what == "query":
        return InvalidInputError(message)
    return InvalidInputError(
        f"{message} (max_text_chars raises it, up to {MAX_TEXT_CHARS_CEILING:,})",
        mentions=("max_text_chars",),
    )


def read_text(
    words: Sequence[str] | None, stdin: BinaryIO, what: str = "memory text", limit: int = MAX_TEXT_CHARS
) -> str:
    """The text of a memory or query: the words joined by spaces, or stdin for ``-``, read only up
    to what a text of ``limit`` characters can take (``stdin_bound``): memory stays bounded.

    Leading and trailing whitespace is removed. Raises InvalidInputError for empty text, for
    stdin that is not UTF-8 and for stdin longer than the bound (naming the limit).
    """
    words = list(words or [])
    if words == [STDIN_MARKER]:
        raw = _read_bounded(stdin, what, limit)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                f"stdin is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
            ) from None
    else:
        text = " ".join(words)
    text = strip_text(text)
    if not text:
        source = "stdin" if words == [STDIN_MARKER] else "the arguments"
        raise InvalidInputError(f"{what} is empty (nothing but whitespace in {source})")
    return text


#: Bytes of whitespace around a text that stdin may hold beyond what its characters can take.
STDIN_MARGIN_BYTES = 64 * 1024


def stdin_bound(limit: int) -> int:
    """The most bytes ``read_text`` reads from stdin for a text of at most ``limit`` characters:
    four per character (UTF-8's longest) plus ``STDIN_MARGIN_BYTES`` of surrounding whitespace."""
    return 4 * text_limit(limit) + STDIN_MARGIN_BYTES


def _read_bounded(stdin: BinaryIO, what: str, limit: int) -> bytes:
    """All of ``stdin`` if it holds at most ``stdin_bound(limit)`` bytes; InvalidInputError naming
    the limit as soon as it holds more (the rest is never read)."""
    bound = stdin_bound(limit)
    chunks: list[bytes] = []
    size = 0
    while size <= bound:
        chunk = stdin.read(min(bound + 1 - size, 1 << 20))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    raise _over_limit(
        f"{what} on stdin is longer than the limit of {limit:,} characters: "
        f"stopped reading after {bound:,} bytes",
        what,
    )


def clean_name(value: str | None, what: str, parameter: str | None = None) -> str | None:
    """An optional name (user, conversation, role, tag) without surrounding spaces; never empty.
    ``what`` names it in an error, ``parameter`` is the argument it came from, if any."""
    if value is None:
        return None
    cleaned = unicode_only(value, what, parameter).strip()
    if not cleaned:
        raise InvalidInputError(f"{what} must not be empty", parameter=parameter)
    if cleaned.isprintable():  # holds no character of the categories refused below (the common case)
        return cleaned
    if any(unicodedata.category(char) == "Cc" for char in cleaned):
        raise InvalidInputError(
            f"{what} {cleaned!r} must not contain control characters (newlines, tabs…)", parameter=parameter
        )
    if any(unicodedata.category(char) == "Cf" for char in cleaned):
        raise InvalidInputError(
            f"{what} {cleaned!r} must not contain invisible formatting characters "
            "(bidi overrides, zero-width spaces…)",
            parameter=parameter,
        )
    return cleaned


def clean_tags(tags: Sequence[str] | None) -> tuple[str, ...]:
    """The argument ``tags`` (its names), stripped, deduplicated and sorted."""
    return tuple(sorted({name for tag in tags or () if (name := clean_name(tag, "tags", "tags"))}))


def parse_meta(pairs: Sequence[str] | None) -> dict[str, str]:
    """``key=value`` strings (the argument ``meta``) as a dict (a repeated key keeps its last value;
    values may hold ``=``)."""
    meta: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep:
            shown = unicode_only(pair, "meta", "meta")
            raise InvalidInputError(f"meta {shown!r} is not key=value", parameter="meta")
        meta[key.strip()] = value
    return clean_meta(meta, "meta", "meta")


def clean_meta(meta: Mapping[Any, Any], what: str = "meta", parameter: str | None = None) -> dict[str, str]:
    """Metadata as a dict of string keys (not blank) to string values, all valid Unicode;
    InvalidInputError otherwise (``parameter``: the argument it came from, if any)."""
    cleaned: dict[str, str] = {}
    for key, value in meta.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidInputError(f"{what} must map string keys to string values", parameter=parameter)
        if not unicode_only(key, f"a {what} key", parameter).strip():
            raise InvalidInputError(f"{what} has an empty key", parameter=parameter)
        cleaned[key] = unicode_only(value, f"a {what} value", parameter)
    return cleaned


def check_min_score(value: float | None) -> float | None:
    """A relevance threshold in [0, 1] (the argument ``min_score``: the calibrated score), or None."""
    if value is not None and not 0.0 <= value <= 1.0:  # also false for NaN
        raise InvalidInputError(
            f"min_score must be between 0 and 1 (a relevance), not {value}", parameter="min_score"
        )
    return value


_RELATIVE = re.compile(r"([0-9]{1,15})\s*([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_when(value: str | datetime | None, name: str, now: datetime) -> datetime | None:
    """A moment from ``30m``/``12h``/``7d``/``2w`` (that long before ``now``), an ISO 8601 date or
    date-time, or a datetime; without an offset it is UTC (as every time remem shows); or a query's
    time words (``yesterday``, ``last week``, ``monday``, ``3 days ago``…): the local start of the
    day, week or month they name. The result is in UTC. Raises InvalidInputError otherwise, or for a
    moment outside years 1–9999 in UTC; ``name`` is the argument (``since``), the error's parameter.
    """
    hint = (
        "an ISO date/time (2026-11-29, 2026-11-29T14:00), an age (30m, 12h, 7d) nor a time word "
        "(yesterday, last week, monday, 16 november 2023)"
    )
    return _moment_of(value, name, now, later=False, hint=hint)


def parse_expiry(value: str | datetime | None, name: str, now: datetime) -> datetime | None:
    """When a memory expires: ``30m``/``12h``/``30d``/``2w`` (that long after ``now``), an ISO 8601
    date or date-time (without an offset: UTC; a date: its start), or a datetime; in UTC. Raises
    InvalidInputError otherwise (naming ``name``, the error's parameter)."""
    hint = "a time from now (30m, 12h, 30d, 2w) nor an ISO date/time (2026-12-31, 2026-12-31T18:00)"
    return _moment_of(value, name, now, later=True, hint=hint)


def _moment_of(
    value: str | datetime | None, name: str, now: datetime, *, later: bool, hint: str
) -> datetime | None:
    """``parse_when`` (an age before ``now``, time words too) or, ``later``, ``parse_expiry`` (a
    time after ``now``); ``hint`` lists the forms in the error."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return _in_utc(value, f"{name} {value.isoformat()!r}", name)
    text = value.strip()
    relative = _RELATIVE.fullmatch(text.lower())
    if relative:
        seconds = int(relative.group(1)) * _UNIT_SECONDS[relative.group(2)]
        return _after(now, seconds, name, value) if later else _before(now, seconds, name, value)
    moment = parse_iso(text) or (None if later else _time_words(text, now))
    if moment is None:
        raise InvalidInputError(f"{name} {value!r} is neither {hint}", parameter=name)
    return _in_utc(moment, f"{name} {value!r}", name)


def expiry_iso(value: str | datetime | None, name: str, now: datetime | None = None) -> str | None:
    """When a memory expires (``parse_expiry``; ``now`` by default the current time) as UTC ISO
    8601: a time still to come, else InvalidInputError (naming ``name``, the error's parameter)."""
    now = now or datetime.now(timezone.utc)
    expiry = parse_expiry(value, name, now)
    if expiry is not None and expiry <= now:
        raise InvalidInputError(
            f"{name} {utc_iso(expiry)} has passed: a memory expires at a time still to come",
            parameter=name,
        )
    return None if expiry is None else utc_iso(expiry)


def _time_words(text: str, now: datetime) -> datetime | None:
    """The local start of the day, week or month that ``text`` (all of it) names, as a query's time
    words do (``remem.timewords``): ``yesterday`` is yesterday's local midnight; None otherwise."""
    from remem.timewords import LOCAL, find_window  # noqa: PLC0415 - only for words

    found = find_window(text, (now if now.tzinfo else now.replace(tzinfo=timezone.utc)).astimezone(LOCAL))
    if found is None or found[0].group(0).strip() != text:
        return None
    return found[1]


def _before(now: datetime, seconds: int, name: str, value: str) -> datetime:
    """``seconds`` before ``now``; InvalidInputError about ``name`` when that is before year 1."""
    try:
        return now - timedelta(seconds=seconds)
    except OverflowError:
        raise InvalidInputError(f"{name} {value!r} reaches back before the year 1", parameter=name) from None


def _after(now: datetime, seconds: int, name: str, value: str) -> datetime:
    """``seconds`` after ``now``; InvalidInputError about ``name`` when that is after year 9999."""
    try:
        return now + timedelta(seconds=seconds)
    except OverflowError:
        raise InvalidInputError(f"{name} {value!r} reaches beyond the year 9999", parameter=name) from None


def _in_utc(moment: datetime, what: str, parameter: str | None = None) -> datetime:
    """``moment`` in UTC (naive: it is UTC); InvalidInputError when UTC puts it outside years 1–9999."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except (OverflowError, ValueError):
        raise InvalidInputError(
            f"{what} is out of range (years 1 to 9999 in UTC)", parameter=parameter
        ) from None


def parse_iso(text: str) -> datetime | None:
    """An ISO 8601 date or date-time (a trailing ``Z`` means UTC), or None if it is not one."""
    try:
        return datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None


def utc_timestamp(value: object, name: str, parameter: str | None = None) -> str | None:
    """A given timestamp (``created_at``…) as UTC ISO 8601 with a trailing Z: a datetime or an
    ISO 8601 string; one without an offset is UTC. InvalidInputError naming ``name`` otherwise
    (``parameter``: the argument it came from, if any)."""
    if value is None:
        return None
    if not isinstance(value, (str, datetime)):
        raise InvalidInputError(f"{name} must be an ISO 8601 string", parameter=parameter)
    moment = value if isinstance(value, datetime) else parse_iso(value)
    if moment is None:
        raise InvalidInputError(f"{name} {value!r} is not an ISO 8601 date/time", parameter=parameter)
    return utc_iso(_in_utc(moment, f"{name} {str(value)!r}", parameter))
