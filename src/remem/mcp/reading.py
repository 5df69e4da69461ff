"""The tools that read: memory_search, memory_get, memory_list, memory_context.

Each takes the server's ``Service`` first (bound by ``remem.mcp.server``), then the tool's
arguments; its docstring is the tool's description. A remem error becomes the tool's error.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

import remem
from remem import render
from remem.mcp import paging
from remem.mcp.schemas import (
    ANY_MEMORY,
    ContextItemOut,
    ContextOut,
    ContextQuery,
    Cursor,
    Dates,
    DatesOut,
    Explain,
    GetOut,
    HitOut,
    Ids,
    IncludeExpired,
    IncludeSuperseded,
    K,
    Limit,
    ListOut,
    MaxChars,
    MemoryOut,
    MinScore,
    Mode,
    Query,
    Recent,
    SearchOut,
    Similar,
    cut,
)
from remem.mcp.scope import Scope
from remem.mcp.service import Service

#: A line that does not fit the rest of the budget is cut when at least this much room is left.
MIN_CUT_LINE = 80
#: How a date reading's note says to turn it off, in this front-end's words.
DATES_OFF = "dates=false ignores them"


def memory_search(
    service: Service,
    scope: Scope,
    query: Query,
    k: K = 5,
    mode: Mode = "hybrid",
    min_score: MinScore = None,
    where: remem.Filters = ANY_MEMORY,
    include_superseded: IncludeSuperseded = False,
    include_expired: IncludeExpired = False,
    dates: Dates = True,
    explain: Explain = False,
) -> SearchOut:
    """Search memories by meaning and exact words, best first. Time words in the query ("the bug
    from Tuesday", "last week") rank memories from then higher, hiding none (see dates in the
    result); since/until filter. When nothing is found, a note says why."""
    where = including(where, include_superseded, include_expired)
    if mode != "keyword":
        service.wait_for_model()  # right after the start: the first searches wait for the model
    result, used, note = service.run(
        lambda memories: _search(service, memories, query, k, mode, min_score, where, dates, scope)
    )
    hits = [HitOut.of(hit, render.explain_record(hit) if explain else None) for hit in result]
    read = None if result.dates is None else DatesOut(**result.dates.record())
    notes = list(result.notes_saying(DATES_OFF))
    if result.nothing is not None:
        notes.append(result.nothing.line())
    return SearchOut(mode=used, hits=hits, lane_note=note, notes=notes, dates=read)


def _search(
    service: Service,
    memories: remem.Memories,
    query: str,
    k: int,
    mode: str,
    min_score: float | None,
    where: remem.Filters,
    dates: bool,
    scope: Scope,
) -> tuple[remem.SearchResult, str, str | None]:
    """The search inside the caller's pin (its scores count only what the caller sees:
    ``Scope.seen``), on the keyword lane alone while the model loads (then with a note saying so)."""
    seen = scope.seen
    if mode == "keyword" or service.ready:
        found = memories.search(
            query, k=k, mode=mode, min_score=min_score, where=where, dates=dates, scope=seen
        )
        return found, mode, None
    found = memories.search(
        query, k=k, mode="keyword", min_score=min_score, where=where, dates=dates, scope=seen
    )
    return found, "keyword", service.waiting_note


def including(where: remem.Filters, superseded: bool, expired: bool) -> remem.Filters:
    """``where`` with the superseded and the expired memories, as asked (both left out by default)."""
    return replace(where, include_superseded=superseded, include_expired=expired)


def memory_get(service: Service, scope: Scope, ids: Ids) -> GetOut:
    """Memories by id, whole (superseded and expired ones too); ids that name no memory are listed
    as missing."""
    wanted = list(dict.fromkeys(ids))
    found = scope.visible(service.run(lambda memories: memories.get_many(wanted)))
    return GetOut(
        memories=[MemoryOut.of(found[i], limit=None) for i in wanted if i in found],
        missing=[i for i in wanted if i not in found],
    )


def memory_list(
    service: Service,
    scope: Scope,
    limit: Limit = 20,
    cursor: Cursor = None,
    where: remem.Filters = ANY_MEMORY,
    include_superseded: IncludeSuperseded = False,
    include_expired: IncludeExpired = False,
) -> ListOut:
    """List memories, newest first, a page at a time (pass next_cursor back for the next)."""
    where = including(where, include_superseded, include_expired)
    shown, following = service.run(lambda memories: paging.page(memories, where, limit, cursor))
    return ListOut(memories=[MemoryOut.of(memory) for memory in shown], next_cursor=following)


def memory_context(
    service: Service,
    scope: Scope,
    query: ContextQuery = None,
    recent: Recent = 10,
    similar: Similar = 5,
    max_chars: MaxChars = 4_000,
    where: remem.Filters = ANY_MEMORY,
    include_superseded: IncludeSuperseded = False,
    include_expired: IncludeExpired = False,
    dates: Dates = True,
) -> ContextOut:
    """What to know before answering: the newest memories and those most similar to the query
    (time words in it, such as "from Tuesday", rank the similar ones from then higher), each
    once, as prompt lines within a character budget."""
    where = including(where, include_superseded, include_expired)
    notes: list[str] = []
    if similar and query is not None:
        service.wait_for_model()  # right after the start: the first searches wait for the model

    def gather(memories: remem.Memories) -> tuple[list[remem.ContextItem], str | None]:
        newest = memories.list(limit=recent, where=where) if recent else []
        found: list[remem.Memory] = []
        note = None
        if similar and query is not None:
            hits, _, note = _search(service, memories, query, similar, "hybrid", None, where, dates, scope)
            found, notes[:] = [hit.memory for hit in hits], hits.notes_saying(DATES_OFF)
        first: dict[int, remem.ContextItem] = {}  # as `remem context --merge append`: each memory once
        for source, chosen in (("recent", newest), ("similar", found)):
            for memory in chosen:
                first.setdefault(memory.id, remem.ContextItem(source, memory))
        return list(first.values()), note

    items, note = service.run(gather)
    return _pack(items, max_chars, note).model_copy(update={"notes": notes})


def _pack(items: list[remem.ContextItem], max_chars: int, note: str | None) -> ContextOut:
    """The items' prompt lines while they fit in ``max_chars`` (newline-separated); the first line
    that does not fit is cut when there is room enough left, and the rest left out."""
    packed: list[ContextItemOut] = []
    used = 0
    for item in items:
        line = render.prompt_line(item.memory)
        room = max_chars - used - (1 if packed else 0)
        fits = len(line) <= room
        if not fits and room < MIN_CUT_LINE:
            break
        text, truncated = cut(line, None if fits else room)
        source: Literal["recent", "similar"] = "recent" if item.source == "recent" else "similar"
        packed.append(ContextItemOut(id=item.memory.id, source=source, line=text, truncated=truncated))
        used += len(text) + (1 if len(packed) > 1 else 0)
        if truncated:
            break
    prompt = "\n".join(entry.line for entry in packed)
    omitted = len(items) - len(packed)
    cut_any = bool(omitted) or any(entry.truncated for entry in packed)
    return ContextOut(prompt=prompt, items=packed, cut=cut_any, omitted=omitted, lane_note=note)
