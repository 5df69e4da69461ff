"""What both back-ends' ``stats`` share: the counts, the time span and the most frequent users,
conversations, tags and roles, read by the same SQL (it runs on SQLite and PostgreSQL alike), and
their assembly into a StoreStats. A back-end adds only what is its own: the model it records, its
vector index in words, its size."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from remem.reports import Check, StoreStats
from remem.types import utc_now_iso

if TYPE_CHECKING:
    from remem.types import ModelInfo

TOP = 20  # the most frequent users, conversations, tags and roles listed
#: Runs one statement (no parameters) and gives its rows.
Fetch = Callable[[str], Iterable[Sequence[Any]]]
_BY = "SELECT coalesce({0}, '(none)'), count(*) c FROM {1} GROUP BY 1 ORDER BY c DESC, 1 LIMIT {2}"
#: What ``utc_now_iso`` writes, the only time ``expired_count`` puts into a statement.
_ISO = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
_TAGS = "SELECT tag, count(*) c FROM {0} GROUP BY tag ORDER BY c DESC, tag LIMIT {1}"


@dataclass(frozen=True)
class Tables:
    """Where a back-end keeps what is counted: its memories table, its vectors table (one row a
    vector), and a FROM clause giving one row per tag of a memory, in a column ``tag``."""

    memories: str
    vectors: str
    tagged: str


@dataclass(frozen=True)
class Own:
    """What a back-end says of itself: the model of its vectors, its vector index in words, the
    index kind asked for, and its size in bytes."""

    model: ModelInfo | None
    index: str | None
    index_setting: str
    disk_bytes: int


def gather(fetch: Fetch, tables: Tables, own: Own) -> StoreStats:
    """The store's StoreStats: counts, time span and the ``TOP`` most frequent users,
    conversations, tags and roles read through ``fetch``, with what the back-end says of itself."""
    counts = (
        f"SELECT (SELECT count(*) FROM {tables.memories}), (SELECT count(*) FROM {tables.vectors}), "
        f"{superseded_count(tables.memories)}, {expired_count(tables.memories)}, "
        f"min(created_at), max(created_at) FROM {tables.memories}"
    )
    ((memories, vectors, superseded, expired, oldest, newest),) = list(fetch(counts))
    return StoreStats(
        memories=int(memories),
        vectors=int(vectors),
        superseded=int(superseded),
        expired=int(expired),
        oldest=oldest,
        newest=newest,
        model=own.model,
        index=own.index,
        index_setting=own.index_setting,
        disk_bytes=own.disk_bytes,
        by_user=_top(fetch, _BY.format('"user"', tables.memories, TOP)),
        by_conversation=_top(fetch, _BY.format("conversation", tables.memories, TOP)),
        by_tag=_top(fetch, _TAGS.format(tables.tagged, TOP)),
        by_role=_top(fetch, _BY.format("role", tables.memories, TOP)),
    )


def superseded_count(memories: str) -> str:
    """A scalar subquery: how many memories of the table ``memories`` a newer one superseded
    (through its partial index ``memories_superseded``)."""
    return f"(SELECT count(*) FROM {memories} WHERE superseded_by IS NOT NULL)"


def expired_count(memories: str, now: str | None = None) -> str:
    """A scalar subquery: how many memories of the table ``memories`` have expired by ``now`` (UTC
    ISO 8601, default the current time; a literal of remem's own format, checked), through the
    partial index ``memories_expires``."""
    moment = now or utc_now_iso()
    if not _ISO.fullmatch(moment):
        raise ValueError(f"not a UTC ISO 8601 time: {moment!r}")
    return f"(SELECT count(*) FROM {memories} WHERE expires_at IS NOT NULL AND expires_at <= '{moment}')"


def _top(fetch: Fetch, sql: str) -> dict[str, int]:
    """Each name and its count, in the order the statement gives them."""
    return {str(name): int(count) for name, count in fetch(sql)}


#: How many ids of memories whose link leads nowhere ``links_check`` names.
SHOWN = 5


def links_check(fetch: Fetch, memories: str) -> Check:
    """``doctor``'s check of the links in the table ``memories`` (read through ``fetch``): how many
    memories are superseded and expired, and whether every ``superseded_by`` names a stored memory."""
    (superseded, expired), *_ = list(fetch(f"SELECT {superseded_count(memories)}, {expired_count(memories)}"))
    dangling = [
        int(row[0])
        for row in fetch(
            f"SELECT m.id FROM {memories} m WHERE m.superseded_by IS NOT NULL AND NOT EXISTS "
            f"(SELECT 1 FROM {memories} n WHERE n.id = m.superseded_by) ORDER BY m.id LIMIT {SHOWN + 1}"
        )
    ]
    counts = f"{int(superseded)} superseded, {int(expired)} expired"
    if not dangling:
        return Check("memory links", True, counts)
    named = ", ".join(map(str, dangling[:SHOWN])) + (", …" if len(dangling) > SHOWN else "")
    return Check("memory links", False, f"{counts}; superseded by a memory that is not stored: {named}")
