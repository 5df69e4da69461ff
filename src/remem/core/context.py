"""What an assistant should see: the newest memories and the most similar ones, merged, each once."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from remem.types import Memory


class Merge(str, Enum):
    """How recent and similar memories are combined."""

    APPEND = "append"  # recent, then similar
    PREPEND = "prepend"  # similar, then recent
    INTERLEAVE = "interleave"  # recent, similar, recent, similar…


@dataclass(frozen=True)
class ContextItem:
    """One memory of a context pack and why it is there: ``"recent"`` or ``"similar"``."""

    source: str
    memory: Memory


def merge(recent: list[Memory], similar: list[Memory], how: Merge) -> list[ContextItem]:
    """The two lists combined as asked, each memory once (its first place), tagged with its source."""
    tagged_recent = [ContextItem("recent", m) for m in recent]
    tagged_similar = [ContextItem("similar", m) for m in similar]
    if how is Merge.APPEND:
        ordered = tagged_recent + tagged_similar
    elif how is Merge.PREPEND:
        ordered = tagged_similar + tagged_recent
    else:
        ordered = [pair for both in zip(tagged_recent, tagged_similar, strict=False) for pair in both]
        shorter = min(len(recent), len(similar))
        ordered += tagged_recent[shorter:] + tagged_similar[shorter:]
    first: dict[int, ContextItem] = {}
    for item in ordered:
        first.setdefault(item.memory.id, item)
    return list(first.values())
