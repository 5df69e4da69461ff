"""The page's application: sign-in, sessions, CSRF, headers, and the routes that read.

Every request of a signed-in browser is served within its token's pin (``Scope.of_token``) through
the same functions as the MCP tools (``remem.mcp.reading``, ``remem.mcp.writing``) on the server's one
``Service``, so isolation is enforced in one place. The token is checked again on every request
(``sessions``), every POST must carry its session's CSRF token, and every answer carries a strict
Content-Security-Policy (no script at all; the one stylesheet is served here).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as Asgi

import remem
from remem.errors import InvalidInputError, MemoryNotFoundError, RememError, StoreError
from remem.mcp.scope import Scope
from remem.mcp.service import Service
from remem.web.display import Renderer
from remem.web.sessions import SESSION_COOKIE, Session, Sessions, same

T = TypeVar("T")

#: Every answer's security headers: no script, no frame, no form posted elsewhere, nothing cached.
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
#: Who the writes of ``remem ui``'s signed-in owner (no token: its one-time code) name.
UI_WRITER = "ui"
#: The same answer to any token that is not good (unknown, revoked, expired).
NOT_SIGNED_IN = "that token is not valid: it is unknown, revoked or expired"

Form = dict[str, str]


@dataclass(frozen=True)
class Visitor:
    """A signed-in browser: its session, its token (None: signed in on this computer with the
    one-time code of ``remem ui``, the store's owner) and its pin (nothing pinned without a token)."""

    session_id: str
    session: Session
    token: remem.Token | None
    scope: Scope


Handler = Callable[[Request, Visitor, Form], Awaitable[Response]]


class Secured:
    """ASGI middleware: the security headers on every answer of ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap ``app``."""
        self.app = app

    async def __call__(self, scope: Asgi, receive: Receive, send: Send) -> None:
        """Serve the request, adding the headers."""

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                taken = {name.lower() for name, _ in message.get("headers", [])}
                extra = [
                    (k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items() if k.encode() not in taken
                ]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, sending)


class Pages:
    """The page's state: the server's ``Service``, the sessions, the templates."""

    def __init__(self, service: Service, code: str | None = None) -> None:
        """Serve the store of ``service``; ``code``: a one-time code that signs in without a token."""
        self.service = service
        self.sessions = Sessions(code=code)
        self.renderer = Renderer()

    async def run(self, work: Callable[[], T]) -> T:
        """``work()`` on a worker thread (it blocks on the store)."""
        return await anyio.to_thread.run_sync(work)

    def html(
        self, request: Request, name: str, visitor: Visitor | None, status: int = 200, **values: Any
    ) -> Response:
        """Template ``name`` as the answer, with the visitor (its pin, its CSRF token) beside ``values``."""
        body = self.renderer.render(
            name, visitor=visitor, csrf=visitor.session.csrf if visitor else "", **values
        )
        return HTMLResponse(body, status_code=status)

    def failure(self, request: Request, visitor: Visitor | None, status: int, message: str) -> Response:
        """An error page with one line."""
        return self.html(request, "message.html", visitor, status, title="Not done", message=message)

    def refused(self, request: Request, exc: RememError, visitor: Visitor | None) -> Response:
        """The page of a remem error: 404 for a missing memory, 503 for the store, 400 otherwise."""
        status = 404 if isinstance(exc, MemoryNotFoundError) else 503 if isinstance(exc, StoreError) else 400
        message = "there is no such memory" if status == 404 else " ".join(str(exc).split())
        return self.failure(request, visitor, status, message)

    async def visitor(self, request: Request) -> Visitor | None:
        """The signed-in visitor of ``request``, its token checked again now; None (and its session
        ended) when it has no session or its token no longer works."""
        session_id = request.cookies.get(SESSION_COOKIE)
        session = self.sessions.get(session_id)
        if session is None or session_id is None:
            return None
        secret = session.secret
        if secret is None:
            return Visitor(session_id, session, None, Scope(writer=UI_WRITER))
        token = await self.run(lambda: self.service.run(lambda memories: memories.tokens.verify(secret)))
        if token is None:
            self.sessions.end(session_id)
            return None
        return Visitor(session_id, session, token, Scope.of_token(token))

    def route(
        self, path: str, handler: Handler, methods: tuple[str, ...] = ("GET",), *, writes: bool = False
    ) -> Route:
        """``handler`` at ``path`` for signed-in visitors only (others go to the sign-in page); a
        POST without its session's CSRF token is refused (403), and so is a write by a read-only
        token; a remem error becomes its page."""

        async def endpoint(request: Request) -> Response:
            try:
                visitor = await self.visitor(request)
            except StoreError as exc:
                return self.refused(request, exc, None)
            if visitor is None:
                answer = RedirectResponse("/signin", status_code=303)
                answer.delete_cookie(SESSION_COOKIE, path="/")
                return answer
            form: Form = {}
            if request.method == "POST":
                form = await read_form(request)
                if not same(form.get("csrf"), visitor.session.csrf):
                    return self.failure(
                        request, visitor, 403, "the form is stale or not from this page: reload it"
                    )
            if writes and visitor.scope.read_only:
                return self.failure(
                    request, visitor, 403, "this token is read-only: it cannot change memories"
                )
            try:
                return await handler(request, visitor, form)
            except RememError as exc:
                return self.refused(request, exc, visitor)

        return Route(path, endpoint, methods=list(methods))


async def read_form(request: Request) -> Form:
    """The text fields of a posted form (files are ignored)."""
    form = await request.form()
    return {key: value for key, value in form.multi_items() if isinstance(value, str)}


def secure_cookie(response: Response, request: Request, name: str, value: str, path: str = "/") -> None:
    """Set cookie ``name``: HttpOnly, SameSite=Strict, Secure when served over HTTPS."""
    https = request.url.scheme == "https"
    response.set_cookie(name, value, path=path, httponly=True, samesite="strict", secure=https)


def whole_number(value: str, name: str) -> int:
    """``value`` as a positive whole number; InvalidInputError naming ``name`` otherwise."""
    if not value.isdigit() or not 0 < int(value) < 2**63:
        raise InvalidInputError(f"{name} must be a positive whole number")
    return int(value)
