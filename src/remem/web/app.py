"""The page's application: its routes, and signing in and out.

``build`` puts together the sign-in form, the stylesheet, the routes that read (``views``) and those
that write (``changes``), behind the security headers (``pages.Secured``).
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from remem.errors import StoreError
from remem.mcp.service import Service
from remem.web import changes, views
from remem.web.display import stylesheet
from remem.web.pages import NOT_SIGNED_IN, Pages, Secured, Visitor, read_form, secure_cookie
from remem.web.sessions import SESSION_COOKIE, SIGNIN_COOKIE, new_secret, same


def build(service: Service, code: str | None = None) -> ASGIApp:
    """The page's ASGI application for the store of ``service``; ``code``: a one-time code that
    signs one browser in without a token (``remem ui``), or None."""
    pages = Pages(service, code)

    async def form(request: Request) -> Response:
        code = request.query_params.get("code")
        if code is None:
            return await sign_in_form(pages, request)
        return await sign_in_with_code(pages, request, code)

    async def signing_in(request: Request) -> Response:
        return await sign_in(pages, request)

    async def css(request: Request) -> Response:
        return Response(stylesheet(), media_type="text/css")

    async def signing_out(request: Request, visitor: Visitor, form: dict[str, str]) -> Response:
        return await sign_out(pages, visitor)

    routes = [
        Route("/signin", form, methods=["GET"]),
        Route("/signin", signing_in, methods=["POST"]),
        Route("/remem.css", css, methods=["GET"]),
        pages.route("/signout", signing_out, ("POST",)),
        *views.routes(pages),
        *changes.routes(pages),
    ]

    async def missing(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        return pages.failure(
            request, None, status, "there is no such page" if status == 404 else "not allowed"
        )

    return Secured(Starlette(routes=routes, exception_handlers={404: missing, 405: missing}))


async def sign_in_form(pages: Pages, request: Request, status: int = 200, message: str = "") -> Response:
    """The sign-in form, with a fresh CSRF token in its field and in a cookie of its own."""
    csrf = new_secret()
    answer = pages.html(
        request, "signin.html", None, status, title="Sign in", signin_csrf=csrf, message=message
    )
    secure_cookie(answer, request, SIGNIN_COOKIE, csrf, path="/signin")
    return answer


async def sign_in(pages: Pages, request: Request) -> Response:
    """Sign in with a token: a new session (its id in the cookie; the token stays in the server) and
    on to the newest memories; the form again with one line when the token does not work."""
    form = await read_form(request)
    if not same(form.get("csrf"), request.cookies.get(SIGNIN_COOKIE, "")) or not form.get("csrf"):
        return await sign_in_form(pages, request, 403, "the form is stale: sign in again")
    secret = form.get("token", "").strip()
    try:
        token = await pages.run(lambda: pages.service.run(lambda memories: memories.tokens.verify(secret)))
    except StoreError as exc:
        return pages.refused(request, exc, None)
    if not secret or token is None:
        return await sign_in_form(pages, request, 401, NOT_SIGNED_IN)
    return signed_in(pages, request, secret)


async def sign_in_with_code(pages: Pages, request: Request, code: str) -> Response:
    """Sign in with the one-time code (``remem ui``): a session of this computer, and on to a URL
    without the code; the form when the code is wrong or used."""
    if not pages.sessions.redeem(code):
        return await sign_in_form(pages, request, 401, "that code is used or wrong: run remem ui again")
    return signed_in(pages, request, None)


def signed_in(pages: Pages, request: Request, secret: str | None) -> Response:
    """A new session for ``secret`` (the old one of this browser ended), its cookie, and on to the
    newest memories."""
    pages.sessions.end(request.cookies.get(SESSION_COOKIE))
    session_id, _ = pages.sessions.start(secret)
    answer = RedirectResponse("/", status_code=303)
    secure_cookie(answer, request, SESSION_COOKIE, session_id)
    answer.delete_cookie(SIGNIN_COOKIE, path="/signin")
    return answer


async def sign_out(pages: Pages, visitor: Visitor) -> Response:
    """End the session and go to the sign-in page."""
    pages.sessions.end(visitor.session_id)
    answer = RedirectResponse("/signin", status_code=303)
    answer.delete_cookie(SESSION_COOKIE, path="/")
    return answer
