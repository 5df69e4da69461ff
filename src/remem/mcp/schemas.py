"""What the tools take and give: typed, bounded arguments and structured results (pydantic), from
which the SDK writes each tool's input and output JSON schema."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field

import remem

#: Texts longer than this are cut in search and list results (``truncated``); memory_get is whole.
TEXT_LIMIT = 2_000

_Name = Annotated[str, Field(min_length=1, max_length=200)]
_WHEN = (
    "ISO date/time (2026-11-29, 2026-11-29T14:00), an age before now (30m, 12h, 7d, 2w) or time words "
    "(yesterday, monday, last week: the start of that day or week in the server's local time)"
)

Text = Annotated[str, Field(min_length=1, max_length=100_000, description="The memory's text.")]
NewText = Annotated[
    str | None, Field(min_length=1, max_length=100_000, description="Its new text (none: kept).")
]
Query = Annotated[str, Field(min_length=1, max_length=10_000, description="What to look for, in words.")]


def _not_a_flag(value: Any) -> Any:
    """JSON's true and false are not numbers (pydantic would read true as 1: memory 1)."""
    if isinstance(value, bool):
        raise ValueError("Input should be a whole number, not true or false")
    return value


#: After a number's Field (so the input schema keeps its minimum and maximum): a whole number as
#: pydantic reads one (5, "5", 5.0), but never true or false.
NOT_A_FLAG = BeforeValidator(_not_a_flag)

K = Annotated[int, Field(ge=1, le=50, description="How many hits at most."), NOT_A_FLAG]
Mode = Annotated[
    Literal["hybrid", "vector", "keyword"],
    Field(description="hybrid: both lanes fused; vector: by meaning; keyword: exact words (BM25)."),
]
MinScore = Annotated[
    float | None,
    Field(ge=0.0, le=1.0, description="Leave out hits below this score (a relevance, 0..1, every mode)."),
]
Dates = Annotated[
    bool,
    Field(
        description='Read time words in the query ("from Tuesday", "last week", "yesterday") as a '
        "created_at window in the server's local time whose memories rank higher (not a filter: "
        "since/until filter, and win); false: read none."
    ),
]
Explain = Annotated[
    bool,
    Field(description="Also say per hit why it ranked there: each lane's rank and raw score, every lift."),
]
TagFilter = Annotated[
    tuple[_Name, ...], Field(max_length=20, description="Only memories that have all these tags.")
]
Tags = Annotated[
    tuple[_Name, ...] | None,
    Field(
        max_length=20,
        description="Tags to file the memory under (with supersedes: that memory's unless given).",
    ),
]
Role = Annotated[
    str | None, Field(max_length=200, description="Only memories of this role (user, assistant…).")
]
NewRole = Annotated[str | None, Field(max_length=200, description="Who said it: user, assistant…")]
User = Annotated[str | None, Field(max_length=200, description="Only this user's memories.")]
Conversation = Annotated[str | None, Field(max_length=200, description="Only this conversation's memories.")]
NewConversation = Annotated[str | None, Field(max_length=200, description="The conversation it belongs to.")]
Since = Annotated[str | None, Field(max_length=64, description=f"Only memories created at/after: {_WHEN}.")]
Until = Annotated[str | None, Field(max_length=64, description=f"Only memories created before: {_WHEN}.")]
#: What a tool with a ``where: Filters`` parameter takes instead, in this order: ``server.bind``
#: puts these arguments in its place and hands the tool one validated Filters (the pin in force).
FILTER_ARGUMENTS: tuple[tuple[str, Any, Any], ...] = (
    ("tags", TagFilter, ()),
    ("role", Role, None),
    ("since", Since, None),
    ("until", Until, None),
    ("user", User, None),
    ("conversation", Conversation, None),
)
IncludeSuperseded = Annotated[
    bool, Field(description="Also the memories a newer one superseded (memory_add's supersedes).")
]
IncludeExpired = Annotated[bool, Field(description="Also the memories whose expiry (expires) has passed.")]
#: The ``where`` default of a tool before ``server.bind`` replaces it.
ANY_MEMORY = remem.Filters()

Meta = Annotated[
    dict[_Name, Annotated[str, Field(max_length=1_000)]] | None,
    Field(max_length=20, description="Key/value details to keep with the memory."),
]
EditTags = Annotated[Tags, Field(description="Its tags from now on, replacing them all (none: kept).")]
EditMeta = Annotated[Meta, Field(description="Its meta from now on, replacing it (none: kept).")]
MemoryId = Annotated[int, Field(ge=1, description="The memory's id."), NOT_A_FLAG]
Supersedes = Annotated[
    int | None,
    Field(
        ge=1,
        description="The id of a memory (of this user and conversation) that this one replaces: it is "
        "left out of searches, lists and contexts from now on; its tags, meta and conversation are "
        "kept unless given. Add the same text again with it to link a memory stored already.",
    ),
    NOT_A_FLAG,
]
Expires = Annotated[
    str | None,
    Field(
        max_length=64,
        description="When it stops being found: 30m, 12h, 30d, 2w from now, or an ISO date/time "
        "(2026-12-31, 2026-12-31T18:00; UTC without an offset).",
    ),
]
Ids = Annotated[
    list[Annotated[int, Field(ge=1), NOT_A_FLAG]],
    Field(min_length=1, max_length=50, description="Memory ids."),
]
ForgetIds = Annotated[
    list[Annotated[int, Field(ge=1), NOT_A_FLAG]] | None,
    Field(min_length=1, max_length=100, description="The memories to forget (or use filters instead)."),
]
Limit = Annotated[int, Field(ge=1, le=100, description="How many memories per page."), NOT_A_FLAG]
Cursor = Annotated[
    str | None, Field(max_length=500, description="next_cursor of the previous page; omit for the first.")
]
DryRun = Annotated[
    bool,
    Field(description="Only list what would be forgotten; by filters, also give the confirm token for it."),
]
Confirm = Annotated[
    str | None,
    Field(
        max_length=64,
        description="Forgetting by filters: the confirm of the dry run that listed the memories (required). "
        "Exactly those are forgotten, or nothing if the filters now select other memories.",
    ),
]
ContextQuery = Annotated[
    str | None,
    Field(min_length=1, max_length=10_000, description="What the conversation is about (for similar ones)."),
]
Recent = Annotated[int, Field(ge=0, le=50, description="The N newest memories."), NOT_A_FLAG]
Similar = Annotated[
    int, Field(ge=0, le=50, description="The K memories most similar to the query."), NOT_A_FLAG
]
MaxChars = Annotated[
    int,
    Field(ge=200, le=50_000, description="Character budget of the prompt; what does not fit is left out."),
    NOT_A_FLAG,
]


class MemoryOut(BaseModel):
    """A stored memory."""

    id: int
    text: str
    truncated: bool = Field(description="The text was cut (memory_get gives it whole).")
    created_at: str
    updated_at: str | None
    user: str | None
    conversation: str | None
    role: str | None
    tags: list[str]
    meta: dict[str, str]
    superseded_by: int | None = Field(default=None, description="The memory that replaced this one.")
    superseded_at: str | None = Field(default=None, description="When it was replaced (UTC ISO 8601).")
    expires_at: str | None = Field(default=None, description="When it stops being found (UTC ISO 8601).")
    written_by: str | None = Field(
        default=None, description="Who wrote it: a token's name, cli, mcp, import, ui; null: unknown."
    )

    @classmethod
    def of(cls, memory: remem.Memory, limit: int | None = TEXT_LIMIT) -> MemoryOut:
        """``memory`` with its text cut to ``limit`` characters (None: whole)."""
        text, truncated = cut(memory.text, limit)
        return cls(
            id=memory.id,
            text=text,
            truncated=truncated,
            created_at=memory.created_at,
            updated_at=memory.updated_at,
            user=memory.user,
            conversation=memory.conversation,
            role=memory.role,
            tags=list(memory.tags),
            meta=dict(memory.meta),
            superseded_by=memory.superseded_by,
            superseded_at=memory.superseded_at,
            expires_at=memory.expires_at,
            written_by=memory.written_by,
        )


class SnippetOut(BaseModel):
    """The part of a long memory's text that matched the query."""

    text: str = Field(description="The matching part: the whole text's characters start to end.")
    start: int = Field(description="Where it starts in the whole text (characters from 0).")
    end: int = Field(description="Where it ends in the whole text (exclusive).")


class LaneOut(BaseModel):
    """A memory's place in one lane."""

    rank: int = Field(description="1-based rank in the lane.")
    score: float = Field(description="The lane's raw score: cosine (vector) or BM25 (keyword).")


class LiftOut(BaseModel):
    """Something besides the lanes' scores that moved a hit."""

    name: str = Field(description="session, speaker, time, phrase or script.")
    size: float | None = Field(
        description="What it added to the score; null: it moved the hit ahead (phrase) or put its "
        "cosine at the pool's lowest (script, a script the model cannot read)."
    )


class CalibrationOut(BaseModel):
    """How a hit's score was computed."""

    ranking: float = Field(
        description="The score it ranked by: hybrid fused z-score (with lifts), cosine or BM25."
    )
    cosine: float = Field(description="The ranking score in the vector lane's units (a cosine).")
    keyword: float = Field(
        description="The ranking score in the keyword lane's units (BM25 per query weight)."
    )
    rank: float = Field(
        description="Its place in the search's ranking (1: first; a tie shares the mean of its places)."
    )
    relevance: float = Field(description="What these map to: the hit's score.")


class ExplainOut(BaseModel):
    """Why a hit ranked where it did."""

    vector: LaneOut | None = Field(description="Its vector lane rank and cosine (null: not ranked there).")
    keyword: LaneOut | None = Field(description="Its keyword lane rank and BM25 (null: not ranked there).")
    lifts: list[LiftOut] = Field(description="Every lift applied to it, in order.")
    calibration: CalibrationOut | None = Field(
        default=None, description="How its score was computed from the score it ranked by."
    )


class HitOut(BaseModel):
    """A search hit: the mode's score and the memory's rank in each lane (null: not ranked there)."""

    id: int
    text: str
    truncated: bool = Field(description="The text was cut; memory_get gives it whole.")
    score: float = Field(
        description="Relevance 0..1, one scale in every mode (about the share of hits scoring so that "
        "are relevant); the raw cosine and BM25 are in explain."
    )
    vector_rank: int | None
    keyword_rank: int | None
    created_at: str
    tags: list[str]
    user: str | None
    conversation: str | None
    role: str | None
    superseded_by: int | None = Field(
        default=None, description="The memory that replaced this one (found with include_superseded)."
    )
    expires_at: str | None = Field(default=None, description="When it stops being found (UTC ISO 8601).")
    snippet: SnippetOut | None = Field(
        default=None,
        description="The part of a long text that matched the query (null: the text is short enough "
        "to read whole).",
    )
    explain: ExplainOut | None = Field(default=None, description="Why it ranked here (with explain=true).")

    @classmethod
    def of(cls, hit: remem.Hit, explain: dict[str, Any] | None = None) -> HitOut:
        """A search hit, its text cut to ``TEXT_LIMIT``, with the snippet of a long text and, if
        given, why it ranked where it did (``render.explain_record``)."""
        memory = hit.memory
        text, truncated = cut(memory.text, TEXT_LIMIT)
        return cls(
            id=memory.id,
            text=text,
            truncated=truncated,
            score=round(hit.score, 6),
            vector_rank=None if hit.vector is None else hit.vector.rank,
            keyword_rank=None if hit.keyword is None else hit.keyword.rank,
            created_at=memory.created_at,
            tags=list(memory.tags),
            user=memory.user,
            conversation=memory.conversation,
            role=memory.role,
            superseded_by=memory.superseded_by,
            expires_at=memory.expires_at,
            snippet=None if hit.snippet is None else SnippetOut(**vars(hit.snippet)),
            explain=None if explain is None else ExplainOut.model_validate(explain),
        )


class DatesOut(BaseModel):
    """Time words of a query read as a window of created_at."""

    phrase: str = Field(description='The words read, as written ("from Tuesday").')
    query: str = Field(description="What was searched: the query without them.")
    since: str = Field(description="Window start, UTC ISO 8601 (local midnight).")
    until: str | None = Field(description="Window end (exclusive), UTC ISO 8601; null: until now.")
    local: str = Field(description="The window in local dates: 2026-11-24, or 2026-11-23 to 2026-11-29.")
    all_time: bool = Field(description="No memory the search found is from the window.")


class SearchOut(BaseModel):
    """Search results, best first."""

    mode: str = Field(description="The mode the search ran in.")
    hits: list[HitOut]
    lane_note: str | None = Field(description="Set while the model loads: only the keyword lane ran.")
    notes: list[str] = Field(description="E.g. a query cut to the model's window, how time words were read.")
    dates: DatesOut | None = Field(
        default=None, description="How time words in the query were read (null: none were)."
    )


class SimilarOut(BaseModel):
    """A stored memory that says nearly what the added one says."""

    id: int
    score: float = Field(description="The cosine between the two (1: the same meaning).")


class AddOut(BaseModel):
    """Where a memory was stored."""

    id: int
    duplicate: bool = Field(description="The same text was stored already (this id); nothing new was added.")
    embedded: bool = Field(
        description="Stored with vectors now; false while the model loads (found by keyword now, "
        "by meaning once it is loaded) or for a duplicate."
    )
    supersedes: int | None = Field(default=None, description="The memory it replaces (as asked).")
    current_again: bool = Field(
        default=False,
        description="The text's memory was superseded or expired, and is current again (with this call's "
        "expiry): found by every search from now on.",
    )
    superseded: list[int] = Field(
        default_factory=list,
        description="The memories this call retired: the one in supersedes and, for a memory current "
        "again, the one that had replaced it.",
    )
    similar: list[SimilarOut] = Field(
        default_factory=list,
        description="Stored memories of this user and conversation that say nearly the same, best first "
        "(only when embedded). If the new one replaces one of them, call memory_add again with the same "
        "text and supersedes set to its id; if both hold, do nothing.",
    )


class GetOut(BaseModel):
    """The memories asked for, in the order asked, and the ids that name none."""

    memories: list[MemoryOut]
    missing: list[int]


class ListOut(BaseModel):
    """A page of memories, newest first."""

    memories: list[MemoryOut]
    next_cursor: str | None = Field(description="Pass it as cursor for the next page; null on the last.")


class ForgetOut(BaseModel):
    """What was forgotten (with dry_run: what would be)."""

    dry_run: bool
    count: int = Field(description="How many memories were (would be) forgotten.")
    forgotten: list[int]
    missing: list[int] = Field(description="Ids asked for that name no memory.")
    confirm: str | None = Field(
        default=None,
        description="Dry run by filters: pass it as confirm, with the same filters, to forget exactly "
        "these memories.",
    )


class ContextItemOut(BaseModel):
    """One memory of a context pack."""

    id: int
    source: Literal["recent", "similar"]
    line: str = Field(description="The memory as a prompt line: [date time] (role, user) text.")
    truncated: bool = Field(description="The line was cut to fit the budget.")


class ContextOut(BaseModel):
    """What an assistant should see: the newest and the most similar memories, each once."""

    prompt: str = Field(description="The lines, ready to paste into a prompt (at most max_chars).")
    items: list[ContextItemOut]
    cut: bool = Field(description="Something was cut or left out to keep within max_chars.")
    omitted: int = Field(description="Memories left out for the budget.")
    lane_note: str | None = Field(description="Set while the model loads: similar ones by keyword only.")
    notes: list[str] = Field(default_factory=list, description="E.g. how time words in the query were read.")


def cut(text: str, limit: int | None) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters (ending in …), and whether it was."""
    if limit is None or len(text) <= limit:
        return text, False
    return text[: limit - 1] + "…", True
