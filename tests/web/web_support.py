"""Helpers of the page's tests: ``remem serve``'s whole ASGI application (``/mcp`` and the page) for a
store, with the fake embedder, driven by Starlette's TestClient; signing in as a browser does."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
from starlette.testclient import TestClient

import remem
from remem.mcp.http import build_app
from remem.mcp.server import build_server
from remem.testing import FakeEmbedder

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def memories(store: Path | str) -> remem.Memories:
    """The store opened directly (another client of it), with the fake embedder."""
    return remem.open(store, embedder=FakeEmbedder())


@contextmanager
def page(
    store: Path | str, base_url: str = "http://testserver", code: str | None = None
) -> Iterator[TestClient]:
    """A browser (no redirects followed) on ``remem serve``'s application for ``store``, its model
    loaded (with ``code``: ``remem ui``'s one-time sign-in code)."""
    server = build_server(store, embedder=FakeEmbedder(), warm_up=False, create=False, name="remem serve")
    server.service.warm_up()
    with TestClient(build_app(server, code), base_url=base_url, follow_redirects=False) as client:
        yield client


def csrf(html: str) -> str:
    """The CSRF token of the first form of a page."""
    found = CSRF.search(html)
    assert found, html[:2000]
    return found.group(1)


def sign_in(client: TestClient, secret: str) -> None:
    """Sign in with the token ``secret`` as the form does; it must work."""
    form = client.get("/signin")
    answer = client.post("/signin", data={"csrf": csrf(form.text), "token": secret})
    assert answer.status_code == 303 and answer.headers["location"] == "/", answer.text


def post(client: TestClient, path: str, **fields: str) -> httpx2.Response:
    """POST a form of the page, with the CSRF token of the signed-in session."""
    token = csrf(client.get("/").text)
    return client.post(path, data={"csrf": token, **fields})
