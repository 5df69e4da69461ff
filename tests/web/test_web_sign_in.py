"""The page of ``remem serve``: signing in with a token and out, the session cookie's flags, CSRF on
every form, the security headers, a revoked token's session ending at its next request, and a
server built without the page."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient
from web_support import csrf, memories, page, post, sign_in

from remem.mcp.http import build_app
from remem.mcp.server import build_server
from remem.testing import FakeEmbedder

CSP_PARTS = ("default-src 'self'", "frame-ancestors 'none'", "script-src 'none'")


def _store(store: Path) -> str:
    with memories(store) as m:
        m.add("the deploy key rotates monthly", user="alice")
        return m.tokens.add(user="alice", name="alice-laptop")[0]


def test_a_visitor_without_a_session_is_sent_to_sign_in(store_dir: Path) -> None:
    _store(store_dir)
    with page(store_dir) as browser:
        for path in ("/", "/search?q=deploy", "/memories/1", "/export.jsonl"):
            answer = browser.get(path)
            assert answer.status_code == 303 and answer.headers["location"] == "/signin", path
        form = browser.get("/signin")
        assert form.status_code == 200 and 'type="password"' in form.text
        assert "deploy key" not in form.text


def test_signing_in_sets_a_strict_http_only_session_cookie_that_is_not_the_token(store_dir: Path) -> None:
    secret = _store(store_dir)
    with page(store_dir) as browser:
        form = browser.get("/signin")
        answer = browser.post("/signin", data={"csrf": csrf(form.text), "token": secret})
        assert answer.status_code == 303 and answer.headers["location"] == "/"
        cookie = next(c for c in answer.headers.get_list("set-cookie") if c.startswith("remem_session="))
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Secure" not in cookie
        assert secret not in cookie and secret not in answer.headers["location"]
        listed = browser.get("/")
        assert listed.status_code == 200 and "the deploy key rotates monthly" in listed.text
        assert "alice-laptop" in listed.text and secret not in listed.text


def test_the_session_cookie_is_secure_under_https(store_dir: Path) -> None:
    secret = _store(store_dir)
    with page(store_dir, base_url="https://testserver") as browser:
        form = browser.get("/signin")
        assert "Secure" in form.headers["set-cookie"]
        answer = browser.post("/signin", data={"csrf": csrf(form.text), "token": secret})
        cookie = next(c for c in answer.headers.get_list("set-cookie") if c.startswith("remem_session="))
        assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie


def test_a_wrong_or_revoked_token_is_refused_alike(store_dir: Path) -> None:
    secret = _store(store_dir)
    with memories(store_dir) as m:
        revoked = m.tokens.add(user="bob", name="bob-old")[0]
        m.tokens.revoke("bob-old")
    with page(store_dir) as browser:
        answers = []
        for token in ("not-a-token", revoked, ""):
            form = browser.get("/signin")
            answer = browser.post("/signin", data={"csrf": csrf(form.text), "token": token})
            assert answer.status_code == 401 and "remem_session" not in answer.headers.get("set-cookie", "")
            answers.append(answer.text.replace(csrf(answer.text), ""))
        assert answers[0] == answers[1] == answers[2]
        assert browser.get("/").status_code == 303
        sign_in(browser, secret)


def test_every_post_needs_the_csrf_token_of_its_form(store_dir: Path) -> None:
    secret = _store(store_dir)
    with page(store_dir) as browser:
        browser.get("/signin")
        stale = browser.post("/signin", data={"csrf": "made-up", "token": secret})
        assert stale.status_code == 403 and "remem_session=" not in stale.headers.get("set-cookie", "")
        assert browser.get("/").status_code == 303
        sign_in(browser, secret)
        for fields in ({}, {"csrf": ""}, {"csrf": "x" * 43}):
            assert browser.post("/add", data={"text": "added by a forged form", **fields}).status_code == 403
            assert browser.post("/memories/1/forget", data=fields).status_code == 403
            assert browser.post("/signout", data=fields).status_code == 403
        with memories(store_dir) as m:
            assert [x.text for x in m.iter()] == ["the deploy key rotates monthly"]
        assert browser.get("/").status_code == 200  # still signed in


def test_signing_out_ends_the_session(store_dir: Path) -> None:
    secret = _store(store_dir)
    with page(store_dir) as browser:
        sign_in(browser, secret)
        session = browser.cookies.get("remem_session")
        answer = post(browser, "/signout")
        assert answer.status_code == 303 and answer.headers["location"] == "/signin"
        assert browser.get("/").status_code == 303
        browser.cookies.set("remem_session", session)  # the old cookie, kept by a thief
        assert browser.get("/").status_code == 303


def test_a_revoked_tokens_session_ends_at_its_next_request(store_dir: Path) -> None:
    secret = _store(store_dir)
    with page(store_dir) as browser:
        sign_in(browser, secret)
        assert browser.get("/").status_code == 200
        with memories(store_dir) as m:
            m.tokens.revoke("alice-laptop")
        answer = browser.get("/")
        assert answer.status_code == 303 and answer.headers["location"] == "/signin"
        assert "deploy key" not in answer.text


def test_every_answer_forbids_scripts_and_frames(store_dir: Path) -> None:
    secret = _store(store_dir)
    with page(store_dir) as browser:
        answers = [browser.get("/signin"), browser.get("/remem.css"), browser.get("/no-such-page")]
        sign_in(browser, secret)
        answers += [browser.get(path) for path in ("/", "/search?q=deploy", "/memories/1", "/memories/99")]
        for answer in answers:
            policy = answer.headers["content-security-policy"]
            assert all(part in policy for part in CSP_PARTS), answer.url
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert answer.headers["x-frame-options"] == "DENY"
            assert (
                "<script" not in answer.text and "style=" not in answer.text and "<style" not in answer.text
            )
        assert [a.status_code for a in answers] == [200, 200, 404, 200, 200, 200, 404]
        assert answers[1].headers["content-type"].startswith("text/css")


def test_the_mcp_endpoint_and_health_are_served_beside_the_page(store_dir: Path) -> None:
    _store(store_dir)
    with page(store_dir) as browser:
        assert browser.get("/healthz").json()["status"] == "ok"
        assert browser.post("/mcp", json={}).status_code == 401  # still behind its bearer token


def test_a_server_built_without_the_page_serves_only_mcp_and_health(store_dir: Path) -> None:
    secret = _store(store_dir)
    server = build_server(store_dir, embedder=FakeEmbedder(), warm_up=False, create=False)
    with TestClient(build_app(server, page=False), follow_redirects=False) as bare:
        assert bare.get("/healthz").json()["status"] == "ok"
        assert bare.post("/mcp", json={}).status_code == 401
        listed = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        headers = {"Authorization": f"Bearer {secret}", "Accept": "application/json, text/event-stream"}
        assert bare.post("/mcp", json=listed, headers=headers).status_code == 200
        for path in ("/", "/signin", "/recent", "/remem.css"):
            assert bare.get(path).status_code == 404, path
