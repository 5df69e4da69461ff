"""The one shape every history source yields (``Item``), and what it tallies as it reads (``Tally``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

#: Notes kept about messages or notes that could not be read (the rest are counted, not listed).
MAX_NOTES = 20


@dataclass(frozen=True)
class Item:
    """One turn or note read from a source: its text, where it comes from (``where``: the file
    and JSON path or line, for a note about it) and what it becomes (conversation, role, time,
    tags and meta, ``meta["source_id"]`` its identity in the source)."""

    text: str
    where: str
    conversation: str | None = None
    role: str | None = None
    created_at: str | None = None
    tags: tuple[str, ...] = ()
    meta: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Tally:
    """What a source skipped (counted by what it was) and the notes about what it could not read."""

    skipped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    unlisted: int = 0

    def skip(self, what: str, count: int = 1) -> None:
        """Count ``count`` things of kind ``what`` left out."""
        if count:
            self.skipped[what] += count

    def timed(self, moment: str | None, where: str) -> str | None:
        """``moment``; when it is None (no readable time, in the message nor its conversation) a
        note that the one at ``where`` is stored with the time of the import."""
        if moment is None:
            self.note(f"{where}: no readable time; stored with the time of the import")
        return moment

    def note(self, line: str) -> None:
        """Keep ``line`` for the person (up to ``MAX_NOTES``; the rest are counted)."""
        if len(self.notes) < MAX_NOTES:
            self.notes.append(line)
        else:
            self.unlisted += 1
