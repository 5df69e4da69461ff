"""remem's value types: plain, frozen data shared by the core, the back-ends and the front-ends.

Nothing here touches SQLite, FAISS or ONNX; every type is importable from ``remem`` directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from enum import Enum
from typing import Any

import remem.checks as checks  # noqa: PLR0402 - the layer rule reads `from remem import` as the public API
from remem.errors import InvalidInputError
from remem.inputs import clean_meta, clean_name, clean_tags, parse_when, utc_timestamp
from remem.times import utc_iso

_NAMES = ("user", "conversation", "role")
_set = object.__setattr__  # how a frozen dataclass cleans its own fields


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


class Tip(str):
    """A note that suggests something to do that is the same for every store (pull a better model):
    a front-end may say it once and remember ``key`` (the CLI and ``remem mcp`` say it once per
    machine); the library says it whenever it applies and remembers nothing."""

    key: str

    def __new__(cls, text: str, key: str) -> Tip:
        """The tip ``text``, known to front-ends by ``key`` (a word without spaces)."""
        tip = super().__new__(cls, text)
        tip.key = key
        return tip


@dataclass(frozen=True)
class NewMemory:
    """A memory to add, cleaned as it is made (as ``Memories.add`` cleans its arguments): names
    stripped, tags (a list or tuple of strings) deduplicated and sorted, meta a dict of strings.

    ``created_at``/``updated_at`` (ISO 8601, kept in UTC) default to now/None. An imported ``id`` (1 …
    2^53 - 1) is kept when it is larger than every id the store ever gave (ids are never reused);
    otherwise the memory gets the next free id. A wrong type is a TypeError naming the field, a bad
    value an InvalidInputError; the text is checked (not empty, not too long) when it is added.
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
    #: The id of a stored memory this one replaces (same user and conversation; ``Memories.add``).
    supersedes: int | None = None
    #: When it stops being found (UTC ISO 8601); ``Memories.add`` takes ``30d`` or a date too.
    expires_at: str | None = None
    #: Who wrote it (a token's name, ``cli``…; None: unknown): ``Memories.add_entries`` sets it
    #: to ``Memories.writer`` when not given; an import keeps an export's.
    written_by: str | None = None

    def __post_init__(self) -> None:
        checks.string(self.text, "text")
        for name in (*_NAMES, "written_by"):
            _set(self, name, clean_name(checks.optional_string(getattr(self, name), name), name, name))
        _set(self, "tags", clean_tags(checks.strings(self.tags, "tags")))
        _set(self, "meta", clean_meta(checks.string_map(self.meta, "meta"), "meta", "meta"))
        for name in ("created_at", "updated_at", "expires_at"):
            _set(self, name, utc_timestamp(checks.optional_string(getattr(self, name), name), name, name))
        _set(self, "id", checks.given_id(self.id))
        _set(
            self,
            "supersedes",
            None if self.supersedes is None else checks.given_id(self.supersedes, "supersedes"),
        )


@dataclass(frozen=True)
class Memory:
    """A stored memory (without its vectors). ``updated_at`` is set once the text was edited;
    ``superseded_by``/``superseded_at`` once a newer memory replaced it (``Memories.add(...,
    supersedes=)``); ``expires_at`` if it was given a lifetime. A superseded or expired memory stays
    stored, but searches, lists and contexts leave it out unless asked (``include_superseded``,
    ``include_expired``). ``written_by`` names who wrote it: the token of ``remem serve`` (its
    name), ``cli``, ``mcp``, ``import``…, or None (unknown: written before remem recorded it, or by a
    program that named nobody)."""

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
    superseded_by: int | None = None
    superseded_at: str | None = None
    expires_at: str | None = None
    written_by: str | None = None

    def expired(self, now: str | None = None) -> bool:
        """True once ``expires_at`` is at or before ``now`` (UTC ISO 8601; default: the current time)."""
        return self.expires_at is not None and self.expires_at <= (now or utc_now_iso())


@dataclass(frozen=True)
class Filters:
    """Which memories a call looks at: every given field must match, all tags must be present,
    every meta pair must be present, and ``since`` ≤ created_at < ``until``. With ``user``,
    ``shared`` also selects the memories that have no user (the team's shared memories).

    However it is made, it is checked and cleaned as ``Filters.of`` cleans the filter keywords:
    names stripped and never empty, tags (a list or tuple of strings, never one string)
    deduplicated and sorted, meta (pairs or a mapping) sorted, ``since``/``until`` (an ISO 8601
    date/time, an age such as ``7d`` or a query's time words such as ``yesterday``: the local start of
    what they name) kept as UTC ISO 8601 with ``since`` before ``until``. A wrong
    type is a TypeError naming the field, a bad value an InvalidInputError (``shared`` without
    ``user`` too).
    """

    user: str | None = None
    conversation: str | None = None
    role: str | None = None
    tags: tuple[str, ...] = ()
    meta: tuple[tuple[str, str], ...] = ()
    since: str | None = None
    until: str | None = None
    #: With ``user``: also the memories that have no user (the team's shared memories).
    shared: bool = False
    #: Also the memories a newer one superseded.
    include_superseded: bool = False
    #: Also the memories whose ``expires_at`` has passed.
    include_expired: bool = False
    #: Only the memories this writer wrote (``Memory.written_by``).
    written_by: str | None = None

    def __post_init__(self) -> None:
        checks.flag(self.include_superseded, "include_superseded")
        checks.flag(self.include_expired, "include_expired")
        for name in (*_NAMES, "written_by"):
            _set(self, name, clean_name(checks.optional_string(getattr(self, name), name), name, name))
        if checks.flag(self.shared, "shared") and self.user is None:
            raise InvalidInputError(
                "shared needs user: it adds the memories that have no user to that user's",
                parameter="shared",
                mentions=("user",),
            )
        _set(self, "tags", clean_tags(checks.strings(self.tags, "tags")))
        _set(self, "meta", tuple(sorted(clean_meta(_meta_pairs(self.meta), "meta", "meta").items())))
        if self.since is None and self.until is None:
            return
        now = datetime.now(timezone.utc)
        start, end = (
            parse_when(checks.optional_string(getattr(self, name), name), name, now)
            for name in ("since", "until")
        )
        if start is not None and end is not None and start >= end:
            raise InvalidInputError("since must be before until", parameter="since", mentions=("until",))
        _set(self, "since", None if start is None else utc_iso(start))
        _set(self, "until", None if end is None else utc_iso(end))

    def is_empty(self) -> bool:
        """True when the filters select by nothing but whether a memory is superseded or expired
        (every memory, with ``everything()``)."""
        return replace(self, include_superseded=False, include_expired=False) == Filters()

    def hides(self) -> bool:
        """True when superseded or expired memories are left out."""
        return not (self.include_superseded and self.include_expired)

    def everything(self) -> Filters:
        """These filters with superseded and expired memories included."""
        return replace(self, include_superseded=True, include_expired=True)

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
        shared: bool = False,
        include_superseded: bool = False,
        include_expired: bool = False,
        now: datetime | None = None,
        written_by: str | None = None,
    ) -> Filters:
        """Validated filters (see ``Filters``); ``tags`` may be one tag; ``since``/``until`` may also
        be a datetime (naive: UTC), and an age is counted back from ``now`` (``30m``, ``12h``,
        ``7d``, ``2w``); ``shared`` (with ``user``) adds the memories that have no user;
        ``include_superseded``/``include_expired`` add the memories left out by default. A wrong type
        is a TypeError, a bad value an InvalidInputError naming it."""
        moment = checks.instance(now, datetime, "now", "a datetime") if now else datetime.now(timezone.utc)
        start, end = (
            parse_when(checks.optional_moment(value, name), name, moment)
            for name, value in (("since", since), ("until", until))
        )
        return cls(
            user=user,
            conversation=conversation,
            role=role,
            tags=(tags,) if isinstance(tags, str) else () if tags is None else tags,  # type: ignore[arg-type]
            meta=() if meta is None else checks.string_map(meta, "meta"),  # type: ignore[arg-type]
            since=None if start is None else utc_iso(start),
            until=None if end is None else utc_iso(end),
            shared=shared,
            include_superseded=include_superseded,
            include_expired=include_expired,
            written_by=written_by,
        )


def _meta_pairs(meta: object) -> dict[str, str]:
    """Filters' meta, given as (key, value) pairs or as a mapping, as a dict (TypeError if neither)."""
    if meta == ():
        return {}
    if isinstance(meta, Mapping):
        return checks.string_map(meta, "meta")
    pairs = list(checks.items(meta, "meta", "(key, value) pairs of strings or a mapping"))
    if not all(isinstance(pair, tuple) and len(pair) == 2 for pair in pairs):
        raise TypeError("meta must be (key, value) pairs of strings or a mapping")
    return checks.string_map(dict(pairs), "meta")


class SearchMode(str, Enum):
    """How memories are ranked."""

    VECTOR = "vector"  # cosine of embeddings: meaning, paraphrases
    KEYWORD = "keyword"  # BM25 over analyzed terms: exact words and identifiers; needs no model
    HYBRID = "hybrid"  # both, their z-scores fused (remem.core.search.fuse)


@dataclass(frozen=True)
class Lane:
    """A memory's place in one lane: 1-based rank and that lane's score (cosine or BM25)."""

    rank: int
    score: float


@dataclass(frozen=True)
class Lift:
    """What moved a hit in the ranking besides its lanes' scores: ``name`` (``session``, ``speaker``,
    ``time``, ``phrase``, ``script``) and ``size``, what it added to the score (None: it moved the hit
    ahead of the others, or for ``script`` put its cosine at the pool's lowest, without a size)."""

    name: str
    size: float | None = None


@dataclass(frozen=True)
class Snippet:
    """The part of a long memory's text a search matched: ``text`` is ``memory.text[start:end]``
    (character offsets, end exclusive)."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Calibration:
    """How a hit's shown score was computed (``core/search/calibration.py``): ``ranking``, the score
    the search ranked by (hybrid: the fused z-score with its lifts; vector: the cosine; keyword:
    BM25), its ``cosine`` and ``keyword`` terms (that score in each lane's units), its ``rank`` in
    the search's ranking (1 first; memories tied on ``ranking`` share the mean of their places) and
    the ``relevance`` in [0, 1] they map to."""

    ranking: float
    cosine: float
    keyword: float
    rank: float
    relevance: float


@dataclass(frozen=True)
class Hit:
    """A search result. ``score`` is its calibrated relevance in [0, 1], on one scale in every mode
    (``calibration`` says how it was computed); ``vector`` and ``keyword`` are the memory's place and
    raw score in each lane (None where a lane did not rank it); ``snippet`` is the best-matching part
    of a long text (None for a text short enough to show whole).
    """

    memory: Memory
    score: float
    vector: Lane | None = None
    keyword: Lane | None = None
    snippet: Snippet | None = None
    #: What moved it besides its lanes' scores, in the order applied (``--explain``).
    lifts: tuple[Lift, ...] = ()
    #: How ``score`` was computed from what the search ranked by (``--explain``).
    calibration: Calibration | None = None


@dataclass(frozen=True)
class Similar:
    """A stored memory that says nearly what an added one says: its id and the cosine between them."""

    id: int
    score: float


@dataclass(frozen=True)
class AddResult:
    """The id a text is stored under, and whether it was already there (then nothing was added);
    ``similar``: stored memories of the same user (and conversation) that say nearly the same, best
    first — candidates for ``supersedes`` (``Memories.add`` fills it; empty for a duplicate).
    ``current_again``: the text's memory was retired (superseded, or expired) and this add made it
    current again; ``superseded``: the memories it supersedes by this add (the one asked for with
    ``supersedes``; for a memory current again, the head of the chain that had replaced it)."""

    id: int
    duplicate: bool
    similar: tuple[Similar, ...] = ()
    current_again: bool = False
    superseded: tuple[int, ...] = ()


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
    "superseded_by",
    "superseded_at",
    "expires_at",
    "written_by",
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
        "superseded_by": memory.superseded_by,
        "superseded_at": memory.superseded_at,
        "expires_at": memory.expires_at,
        "written_by": memory.written_by,
    }


#: The longest name a token may have (characters).
TOKEN_NAME_CHARS = 64


@dataclass(frozen=True)
class Token:
    """A bearer token of ``remem serve`` (never the secret itself: only its hash is stored).

    ``name`` is unique in the store (the label a revocation takes); ``user`` the user every call made
    with it is pinned to (None: an admin token, which sees every user's memories); ``conversation``
    the pinned conversation, if any; ``read_only``: no add, edit or forget; ``private``: with a user,
    its own memories only, not the shared (user-less) ones; ``created_at`` UTC ISO 8601;
    ``expires_at`` (UTC ISO 8601, after ``created_at``) when it stops working, None: never. Cleaned as
    it is made: names stripped; a token name never empty, without whitespace or unprintable
    characters, at most 64 characters; ``private`` needs a user. A wrong type is a TypeError naming
    the field, a bad value an InvalidInputError.
    """

    name: str
    user: str | None
    conversation: str | None
    read_only: bool
    private: bool
    created_at: str
    expires_at: str | None = None

    def __post_init__(self) -> None:
        _set(self, "name", token_name(checks.string(self.name, "name")))
        for name in ("user", "conversation"):
            _set(self, name, clean_name(checks.optional_string(getattr(self, name), name), name, name))
        checks.flag(self.read_only, "read_only"), checks.flag(self.private, "private")
        expires_at = checks.optional_string(self.expires_at, "expires_at")
        if expires_at is not None and expires_at <= checks.string(self.created_at, "created_at"):
            raise InvalidInputError(
                "expires_at has passed: a token expires at a time still to come", parameter="expires_at"
            )
        checks.string(self.created_at, "created_at")
        if self.private and self.user is None:
            raise InvalidInputError(
                "private needs a user: an admin token sees every memory",
                parameter="private",
                mentions=("user",),
            )

    @property
    def admin(self) -> bool:
        """True for a token pinned to no user: it sees (and may change) every user's memories."""
        return self.user is None

    def expired(self, now: str | None = None) -> bool:
        """True once ``expires_at`` is at or before ``now`` (UTC ISO 8601; default: the current time):
        the token no longer works."""
        return self.expires_at is not None and self.expires_at <= (now or utc_now_iso())


def token_name(value: str) -> str:
    """A token's name, stripped; InvalidInputError (``parameter="name"``) when it is empty, longer
    than 64 characters, or holds whitespace or an unprintable character."""
    cleaned = str(clean_name(value, "name", "name"))  # a str in: a str out, or an error
    if any(char.isspace() for char in cleaned):
        raise InvalidInputError(f"name {cleaned!r} must not contain whitespace", parameter="name")
    if not cleaned.isprintable():
        raise InvalidInputError(f"name {cleaned!r} must hold only printable characters", parameter="name")
    if len(cleaned) > TOKEN_NAME_CHARS:
        raise InvalidInputError(
            f"name has {len(cleaned)} characters, more than {TOKEN_NAME_CHARS}", parameter="name"
        )
    return cleaned


def text_sha256(text: str) -> str:
    """Hex sha256 of the UTF-8 bytes of a memory's text (the deduplication key)."""
    import hashlib  # noqa: PLC0415 - loading OpenSSL costs `list` 3 ms it has no use for

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def utc_now_iso() -> str:
    """The current time in UTC as ISO 8601 with milliseconds and a trailing Z."""
    return utc_iso(datetime.now(timezone.utc))
