"""Moments as remem stores them: UTC ISO 8601 text with milliseconds and a trailing Z.

Below both the value types (``remem.types``) and the input parsing (``remem.inputs``), which both
write times this way.
"""

from __future__ import annotations

from datetime import datetime, timezone


def utc_iso(moment: datetime) -> str:
    """A timezone-aware time as UTC ISO 8601 with milliseconds and a trailing Z (sorts as text)."""
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def from_utc_iso(stored: str) -> datetime:
    """A moment as ``utc_iso`` writes it (trailing Z), back as a timezone-aware datetime."""
    return datetime.fromisoformat(stored.replace("Z", "+00:00"))
