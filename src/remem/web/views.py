"""The page's routes that read: the newest memories, paged; what was remembered recently and by whom
(a token's name, ``cli``…), filtered by writer; search with its filters; a memory's page (its text,
tags, metadata, writer, times, supersede chain and most similar memories); the export (JSONL).

Each goes through the MCP tools' own functions (``remem.mcp.reading``) within the visitor's pin.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

import remem
from remem.errors import MemoryNotFoundError, RememError
from remem.mcp import reading
from remem.mcp.schemas import HitOut, SearchOut
from remem.web.exporting import export_body
from remem.web.pages import Form, Pages, Visitor, whole_number

#: Memories per page of the newest; hits per search; similar memories on a memory's page.
PAGE_SIZE, SEARCH_K, SIMILAR = 20, 20, 5
#: How much of a memory's text its similar memories are searched with.
SIMILAR_QUERY_CHARS = 1_000
#: The search filters the form offers (the pinned ones are not offered).
FILTERS = ("user", "conversation", "role", "tag", "since", "until")


def routes(pages: Pages) -> list[Route]:
    """The reading routes of ``pages``."""

    async def newest(request: Request, visitor: Visitor, form: Form) -> Response:
        cursor = request.query_params.get("cursor") or None
        scope = visitor.scope
        listed = await pages.run(
            lambda: reading.memory_list(pages.service, scope, PAGE_SIZE, cursor, scope.filters())
        )
        return pages.html(
            request,
            "list.html",
            visitor,
            title="Newest memories",
            memories=listed.memories,
            next_cursor=listed.next_cursor,
            asked={},
            hits=None,
        )

    async def recent(request: Request, visitor: Visitor, form: Form) -> Response:
        writer = request.query_params.get("writer", "").strip() or None
        cursor = request.query_params.get("cursor") or None
        scope = visitor.scope
        where = scope.filters(written_by=writer)  # within the pin, whatever writer is asked for
        listed = await pages.run(lambda: reading.memory_list(pages.service, scope, PAGE_SIZE, cursor, where))
        return pages.html(
            request,
            "recent.html",
            visitor,
            title="Recently remembered",
            memories=listed.memories,
            next_cursor=listed.next_cursor,
            writer=writer,
        )

    async def search(request: Request, visitor: Visitor, form: Form) -> Response:
        asked = {name: request.query_params.get(name, "").strip() for name in ("q", "mode", *FILTERS)}
        if not asked["q"]:
            return await newest(request, visitor, form)
        found = await pages.run(lambda: _search(pages, visitor, asked))
        return pages.html(
            request,
            "list.html",
            visitor,
            title="Search",
            memories=None,
            hits=found.hits,
            next_cursor=None,
            asked=asked,
            notes=[n for n in (found.lane_note, *found.notes) if n],
        )

    async def memory(request: Request, visitor: Visitor, form: Form) -> Response:
        memory_id = whole_number(request.path_params["memory_id"], "the memory id")
        shown, chain = await pages.run(lambda: _memory(pages, visitor, memory_id))
        similar = await pages.run(lambda: _similar(pages, visitor, shown))
        return pages.html(
            request,
            "memory.html",
            visitor,
            title=f"Memory {memory_id}",
            memory=shown,
            chain=chain,
            similar=similar,
            changeable=visitor.scope.owns(shown) and not visitor.scope.read_only,
        )

    async def export(request: Request, visitor: Visitor, form: Form) -> Response:
        body = await export_body(pages.service, visitor.scope.filters())  # streamed, never held whole
        disposition = {"content-disposition": 'attachment; filename="remem-export.jsonl"'}
        return StreamingResponse(body, media_type="application/x-ndjson", headers=disposition)

    return [
        pages.route("/", newest),
        pages.route("/recent", recent),
        pages.route("/search", search),
        pages.route("/memories/{memory_id}", memory),
        pages.route("/export.jsonl", export),
    ]


def _search(pages: Pages, visitor: Visitor, asked: dict[str, str]) -> SearchOut:
    """The hybrid search (or the mode asked for) with the form's filters, within the pin."""
    tags = [tag.strip() for tag in asked["tag"].split(",") if tag.strip()]
    where = visitor.scope.filters(
        user=asked["user"] or None,
        conversation=asked["conversation"] or None,
        role=asked["role"] or None,
        tags=tags,
        since=asked["since"] or None,
        until=asked["until"] or None,
    )
    mode = asked["mode"] or "hybrid"
    return reading.memory_search(pages.service, visitor.scope, asked["q"], SEARCH_K, mode, where=where)  # type: ignore[arg-type]


def _memory(pages: Pages, visitor: Visitor, memory_id: int) -> tuple[remem.Memory, list[remem.Memory]]:
    """The memory, if the pin sees it (MemoryNotFoundError otherwise), and the part of its supersede
    chain the pin sees."""

    def look(memories: remem.Memories) -> tuple[remem.Memory, list[remem.Memory]]:
        found = visitor.scope.visible(memories.get_many([memory_id]))
        if memory_id not in found:
            raise MemoryNotFoundError([memory_id])
        chain = [other for other in memories.history(memory_id) if visitor.scope.sees(other)]
        return found[memory_id], chain

    return pages.service.run(look)


def _similar(pages: Pages, visitor: Visitor, memory: remem.Memory) -> list[HitOut]:
    """The memories most similar to ``memory`` within the pin (none when the search fails)."""
    query = memory.text[:SIMILAR_QUERY_CHARS]
    try:
        found = reading.memory_search(
            pages.service, visitor.scope, query, SIMILAR + 1, where=visitor.scope.filters()
        )
    except RememError:
        return []
    return [hit for hit in found.hits if hit.id != memory.id][:SIMILAR]
