"""remem's value types: plain, frozen data shared by the core, the back-ends and the front-ends.

Nothing here touches SQLite, FAISS or ONNX; every type is importable from ``remem`` directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from remem.errors import InvalidInputError


@dataclass(frozen=True)
class ModelInfo:
    """The identity of an embedding model: two equal ``ModelInfo`` make interchangeable vectors.

    A store records the ``ModelInfo`` of the model its vectors came from (its model stamp) and
    refuses vectors of any other.
    """

    name: str
    dim: int
    pooling: str
    sha256: str


@dataclass(frozen=True)
class NewMemory:
    """A memory to add. Tags are deduplicated and sorted when stored; meta values are strings.

    ``created_at``/``updated_at`` (UTC ISO 8601) default to now/None. An imported ``id`` is kept
    when it is larger than every id the store ever gave (ids are never reused); otherwise the
    memory gets the next free id.
    """

    text: str
    user: str | None = None
    conversation: str | None = None
    role: str | None = None
    tags: tuple[str, ...] = ()
    meta: Mapping[str, str] = field(default_factory=dict)
    created_at: str | None = None
    updated_at: str | None = None
    id: int | None = None


@dataclass(frozen=True)
class Memory:
    """A stored memory (without its vectors). ``updated_at`` is set once the text was edited."""

    id: int
    text: str
    sha256: str
    created_at: str
    user: str | None
    conversation: str | None
    role: str | None
    tags: tuple[str, ...]
    meta: dict[str, str]
    updated_at: str | None = None


@dataclass(frozen=True)
class Filters:
    """Which memories a call looks at: every given field must match, all tags must be present,
    every meta pair must be present, and ``since`` ≤ created_at < ``until`` (UTC ISO 8601 strings).
    """

    user: str | None = None
    conversation: str | None = None
    role: str | None = None
    tags: tuple[str, ...] = ()
    meta: tuple[tuple[str, str], ...] = ()
    since: str | None = None
    until: str | None = None

    def is_empty(self) -> bool:
        """True when the filters select every memory."""
        return self == Filters()

    @classmethod
    def of(
        cls,
        *,
        user: str | None = None,
        conversation: str | None = None,
        role: str | None = None,
        tags: Sequence[str] | str | None = None,
        meta: Mapping[str, str] | None = None,
        since: str | datetime | None = None,
        until: str | datetime | None = None,
        now: datetime | None = None,
    ) -> Filters:
        """Validated filters: names stripped and never empty; tags deduplicated; ``since``/``until``
        a datetime (naive: UTC), an ISO 8601 date/time or an age before ``now`` (``30m``,
        ``12h``, ``7d``, ``2w``). InvalidInputError naming the bad value."""
        from remem.inputs import clean_meta, clean_name, clean_tags, parse_when  # noqa: PLC0415 - no cycle at import

        moment = now or datetime.now(timezone.utc)
        start, end = parse_when(since, "--since", moment), parse_when(until, "--until", moment)
        if start is not None and end is not None and start >= end:
            raise InvalidInputError("--since must be before --until")
        return cls(
            user=clean_name(user, "--user"),
            conversation=clean_name(conversation, "--conversation"),
            role=clean_name(role, "--role"),
            tags=clean_tags([tags] if isinstance(tags, str) else tags),
            meta=tuple(sorted(clean_meta(meta or {}, "--meta").items())),
            since=None if start is None else utc_iso(start),
            until=None if end is None else utc_iso(end),
        )


class SearchMode(str, Enum):
    """How memories are ranked."""

    VECTOR = "vector"  # cosine of embeddings: meaning, paraphrases
    KEYWORD = "keyword"  # BM25 over analyzed terms: exact words and identifiers; needs no model
    HYBRID = "hybrid"  # both, fused with Reciprocal Rank Fusion


@dataclass(frozen=True)
class Lane:
    """A memory's place in one lane: 1-based rank and that lane's score (cosine or BM25)."""

    rank: int
    score: float


@dataclass(frozen=True)
class Hit:
    """A search result. ``score`` is the mode's score: cosine, BM25, or the fused RRF score;
    ``vector`` and ``keyword`` are the memory's place in each lane (None where a lane did not rank it).
    """

    memory: Memory
    score: float
    vector: Lane | None = None
    keyword: Lane | None = None


@dataclass(frozen=True)
class AddResult:
    """The id a text is stored under, and whether it was already there (then nothing was added)."""

    id: int
    duplicate: bool


#: Field order of every JSON record of a memory (search adds ``score`` after ``id``).
MEMORY_FIELDS = (
    "id",
    "text",
    "sha256",
    "created_at",
    "updated_at",
    "user",
    "conversation",
    "role",
    "tags",
    "meta",
)


def memory_record(memory: Memory) -> dict[str, Any]:
    """A memory as a JSON-ready dict with the stable field names (never the vector)."""
    return {
        "id": memory.id,
        "text": memory.text,
        "sha256": memory.sha256,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "user": memory.user,
        "conversation": memory.conversation,
        "role": memory.role,
        "tags": list(memory.tags),
        "meta": memory.meta,
    }


def text_sha256(text: str) -> str:
    """Hex sha256 of the UTF-8 bytes of a memory's text (the deduplication key)."""
    import hashlib  # noqa: PLC0415 - loading OpenSSL costs `list` 3 ms it has no use for

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def utc_iso(moment: datetime) -> str:
    """A timezone-aware time as UTC ISO 8601 with milliseconds and a trailing Z (sorts as text)."""
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utc_now_iso() -> str:
    """The current time in UTC as ISO 8601 with milliseconds and a trailing Z."""
    return utc_iso(datetime.now(timezone.utc))
