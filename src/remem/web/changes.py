"""The page's routes that write: add a memory, edit one (text, tags, metadata), supersede one with a
correction, forget one after a confirmation page that shows it. Each is a POST with the session's
CSRF token, refused for a read-only token (``Pages.route``), and goes through the MCP tools' own
functions (``remem.mcp.writing``) within the visitor's pin: another user's memory is missing.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from remem.errors import InvalidInputError
from remem.mcp import reading, writing
from remem.web.pages import Form, Pages, Visitor, whole_number


def tags_of(value: str) -> tuple[str, ...]:
    """The tags of a form field: comma-separated, blanks left out."""
    return tuple(tag.strip() for tag in value.split(",") if tag.strip())


def meta_of(value: str) -> dict[str, str]:
    """The metadata of a form field: one ``key=value`` a line, blank lines left out;
    InvalidInputError for a line without ``=``."""
    meta: dict[str, str] = {}
    for line in value.splitlines():
        if not line.strip():
            continue
        key, equals, item = line.partition("=")
        if not equals:
            raise InvalidInputError("metadata: one key=value a line")
        meta[key.strip()] = item.strip()
    return meta


def _to(memory_id: int) -> Response:
    return RedirectResponse(f"/memories/{memory_id}", status_code=303)


def routes(pages: Pages) -> list[Route]:
    """The writing routes of ``pages``."""

    async def add(request: Request, visitor: Visitor, form: Form) -> Response:
        text, tags = form.get("text", ""), tags_of(form.get("tags", ""))
        added = await pages.run(lambda: writing.memory_add(pages.service, visitor.scope, text, tags or None))
        return _to(added.id)

    async def memory_form(request: Request, visitor: Visitor, template: str, verb: str) -> Response:
        """The form of ``template`` about the memory the path names (404 if the pin sees none)."""
        memory_id = whole_number(request.path_params["memory_id"], "the memory id")
        got = await pages.run(lambda: reading.memory_get(pages.service, visitor.scope, [memory_id]))
        if not got.memories:
            return pages.failure(request, visitor, 404, "there is no such memory")
        return pages.html(
            request, template, visitor, title=f"{verb} memory {memory_id}", memory=got.memories[0]
        )

    async def edit_form(request: Request, visitor: Visitor, form: Form) -> Response:
        return await memory_form(request, visitor, "edit.html", "Edit")

    async def edit(request: Request, visitor: Visitor, form: Form) -> Response:
        memory_id = whole_number(request.path_params["memory_id"], "the memory id")
        tags, meta = tags_of(form.get("tags", "")), meta_of(form.get("meta", ""))
        text = form.get("text")
        await pages.run(
            lambda: writing.memory_edit(pages.service, visitor.scope, memory_id, text, tags, meta)
        )
        return _to(memory_id)

    async def supersede(request: Request, visitor: Visitor, form: Form) -> Response:
        memory_id = whole_number(request.path_params["memory_id"], "the memory id")
        text, tags = form.get("text", ""), tags_of(form.get("tags", ""))
        added = await pages.run(
            lambda: writing.memory_add(pages.service, visitor.scope, text, tags or None, supersedes=memory_id)
        )
        return _to(added.id)

    async def forget_form(request: Request, visitor: Visitor, form: Form) -> Response:
        return await memory_form(request, visitor, "forget.html", "Forget")

    async def forget(request: Request, visitor: Visitor, form: Form) -> Response:
        memory_id = whole_number(request.path_params["memory_id"], "the memory id")
        done = await pages.run(
            lambda: writing.memory_forget(
                pages.service, visitor.scope, [memory_id], where=visitor.scope.filters()
            )
        )
        if not done.forgotten:
            return pages.failure(request, visitor, 404, "there is no such memory")
        return pages.html(
            request, "message.html", visitor, title="Forgotten", message=f"memory {memory_id} is forgotten"
        )

    return [
        pages.route("/add", add, ("POST",), writes=True),
        pages.route("/memories/{memory_id}/edit", edit_form, writes=True),
        pages.route("/memories/{memory_id}/edit", edit, ("POST",), writes=True),
        pages.route("/memories/{memory_id}/supersede", supersede, ("POST",), writes=True),
        pages.route("/memories/{memory_id}/forget", forget_form, writes=True),
        pages.route("/memories/{memory_id}/forget", forget, ("POST",), writes=True),
    ]
