"""What remem's longer operations report back: plain frozen data, importable from ``remem``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, overload

from remem.times import utc_iso
from remem.types import Hit, Memory, ModelInfo

#: How a note about a date reading says how to turn it off, in the library's words (a front-end
#: says it in its own: ``SearchResult.notes_saying``).
DATES_OFF_HINT = "dates=False ignores them"


@dataclass(frozen=True)
class DateReading:
    """How time words in a query were read: ``phrase`` (as written) became the local-time window
    ``start`` ≤ created_at < ``end`` (None: until now), whose memories rank higher (it filters
    nothing), and ``rest`` is the query that was searched. ``all_time`` is true when no memory the
    search found is from then."""

    phrase: str
    rest: str
    start: datetime
    end: datetime | None
    all_time: bool = False

    @property
    def label(self) -> str:
        """The window in local dates: ``2026-11-24``, ``2026-11-23 to 2026-11-29``, ``since …``."""
        first = self.start.date().isoformat()
        if self.end is None:
            return f"since {first}"
        last = (self.end - timedelta(days=1)).date().isoformat()
        return first if last == first else f"{first} to {last}"

    def note(self, hint: str = DATES_OFF_HINT) -> str:
        """One line for a person: what was read, and how to turn it off."""
        read = f'"{self.phrase}" read as {self.label} (local time)'
        if self.all_time:
            return f"{read}; no memory found is from then"
        return f"{read}: memories from then rank higher; {hint}"

    def record(self) -> dict[str, Any]:
        """JSON-ready: phrase, query searched, UTC ``since``/``until``, local label, all_time."""
        return {
            "phrase": self.phrase,
            "query": self.rest,
            "since": utc_iso(self.start),
            "until": None if self.end is None else utc_iso(self.end),
            "local": self.label,
            "all_time": self.all_time,
        }


@dataclass(frozen=True)
class Nothing:
    """Why a search found nothing: ``kind`` ``filters`` (they select no memory; ``what`` is empty),
    ``store`` (it holds no memory), ``unembedded`` (none has a vector, outside keyword mode),
    ``phrase`` (no memory holds the quoted ``what``) or ``words`` (no memory holds any keyword term
    of ``what``)."""

    kind: str
    what: str = ""

    def line(self) -> str:
        """One line for a person, in the library's words."""
        if self.kind == "filters":
            return "the filters select no memory"
        if self.kind == "store":
            return "the store holds no memory yet"
        if self.kind == "unembedded":
            return "no memory has a vector yet: keyword mode finds them by their words"
        if self.kind == "phrase":
            return f'no memory holds the phrase "{self.what}"'
        if len(self.what.split()) > 1:
            return f"no memory holds any word of '{self.what}'"
        return f"no memory holds '{self.what}'"


@dataclass(frozen=True)
class SearchResult(Sequence[Hit]):
    """The hits of a search, best first (a sequence: iterate, index, ``len``), and what else
    happened: how many hits ``min_score`` left out and the best score among them, and notes
    (e.g. a query cut to the model window, an identifier no memory holds), how time words in the
    query were read (``dates``), and when nothing was found for another reason than ``min_score``,
    why (``nothing``)."""

    hits: list[Hit] = field(default_factory=list)
    below_min_score: int = 0
    best_below: float | None = None
    notes: tuple[str, ...] = ()
    dates: DateReading | None = None
    nothing: Nothing | None = None

    @overload
    def __getitem__(self, index: int) -> Hit: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Hit]: ...
    def __getitem__(self, index: int | slice) -> Hit | Sequence[Hit]:
        """The hit at ``index`` (0 is the best)."""
        return self.hits[index]

    def __len__(self) -> int:
        """How many hits."""
        return len(self.hits)

    def __iter__(self) -> Iterator[Hit]:
        """The hits, best first."""
        return iter(self.hits)

    def notes_saying(self, dates_off: str) -> tuple[str, ...]:
        """The notes, the date reading's saying how to turn it off in a front-end's own words
        (``dates_off``, e.g. "--no-dates searches all time") instead of the library's."""
        said = None if self.dates is None else self.dates.note()
        return tuple(self.dates.note(dates_off) if self.dates and n == said else n for n in self.notes)


@dataclass
class BulkResult:
    """What a batch add or import did: ids added, ids of duplicates (the existing memories), input
    lines skipped as invalid, how many exported vectors were reused instead of re-embedded, and how
    many entries an interrupted run of the same ingest had staged already (``resumed``)."""

    added: list[int] = field(default_factory=list)
    duplicates: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    reused_vectors: int = 0
    resumed: int = 0


@dataclass(frozen=True)
class ForgetResult:
    """The memories forgotten, as they were (with ``dry_run``: the ones that would be), in id
    order, and the ids asked for that name no memory."""

    forgotten: tuple[Memory, ...]
    missing: tuple[int, ...]
    dry_run: bool


@dataclass(frozen=True)
class ReindexReport:
    """What a reindex did: the kind built, how many vectors, whether anything changed, seconds."""

    kind: str | None
    vectors: int
    rebuilt_index: bool
    rebuilt_keywords: bool
    seconds: float


@dataclass(frozen=True)
class CompactReport:
    """What a compaction wrote: the vectors caught up into the index file and the terms whose
    keyword heads were taken again (a local store's; 0 and 0: nothing to do)."""

    vectors: int
    keyword_heads: int

    def __bool__(self) -> bool:
        return bool(self.vectors or self.keyword_heads)


@dataclass(frozen=True)
class ReembedReport:
    """How many memories were embedded by this run, and whether the store's model changed."""

    embedded: int
    resumed_from: int
    swapped: bool


@dataclass(frozen=True)
class Check:
    """One finding of ``doctor``: what was checked, whether it is fine, details, and whether
    ``repair`` fixes it."""

    name: str
    ok: bool
    detail: str
    repairable: bool = False


@dataclass(frozen=True)
class DoctorReport:
    """Every check, what ``repair`` did before they were made, and advice: what a person may want to
    do though nothing is wrong (``Memories.index_advice``), one line each."""

    checks: tuple[Check, ...]
    repaired: tuple[str, ...] = ()
    advice: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return all(check.ok for check in self.checks)


@dataclass(frozen=True)
class StoreStats:
    """What a store holds: how many memories and vectors, how many memories were superseded by a
    newer one and how many have expired (both still stored: ``forget_expired`` deletes the expired
    ones), the oldest and newest memory's
    ``created_at`` (None when empty), the model its vectors come from, its vector index in words
    (``index``; None when a local store has not built one yet) and the kind asked for
    (``index_setting``), its size in bytes (files, or tables on the server), and the most frequent
    users, conversations, tags and roles (up to 20 each, most frequent first; ``(none)`` counts the
    memories without one)."""

    memories: int
    vectors: int
    superseded: int
    expired: int
    oldest: str | None
    newest: str | None
    model: ModelInfo | None
    index: str | None
    index_setting: str
    disk_bytes: int
    by_user: Mapping[str, int]
    by_conversation: Mapping[str, int]
    by_tag: Mapping[str, int]
    by_role: Mapping[str, int]

    def record(self) -> dict[str, Any]:
        """JSON-ready, as ``remem stats --json`` prints it: these fields in this order, the model
        as ``name (dim-d, pooling pooling)``, each count by name as an object."""
        model = self.model
        return {
            "memories": self.memories,
            "vectors": self.vectors,
            "superseded": self.superseded,
            "expired": self.expired,
            "oldest": self.oldest,
            "newest": self.newest,
            "model": None if model is None else f"{model.name} ({model.dim}-d, {model.pooling} pooling)",
            "index": self.index,
            "index_setting": self.index_setting,
            "disk_bytes": self.disk_bytes,
            "by_user": dict(self.by_user),
            "by_conversation": dict(self.by_conversation),
            "by_tag": dict(self.by_tag),
            "by_role": dict(self.by_role),
        }
