"""`remem serve`'s door: no token, a wrong one and a revoked one get the same bare 401; tokens live
in the store, so a second server on it honours them and a revocation counts on the next request;
/healthz needs no token and tells nothing about the memories; the token never reaches a log."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest
from mcp_support import memories

from serve_support import call, post, serving, session


def _token(store: Path | str, **pin: object) -> str:
    with memories(store) as m:  # type: ignore[arg-type]
        m.add("the staging database is on port 5433", user="alice")
        secret: str = m.tokens.add(**pin)[0]  # type: ignore[arg-type]
        return secret


def test_no_token_a_wrong_one_and_a_revoked_one_get_the_same_bare_401(store_dir: Path) -> None:
    secret = _token(store_dir, user="alice")
    with serving(store_dir) as server:
        assert post(server.url, secret)[0] == 200
        flipped = secret[:-1] + ("A" if secret[-1] != "A" else "B")
        refusals = [
            post(server.url, None),
            post(server.url, ""),
            post(server.url, "remem_" + "x" * 43),
            post(server.url, flipped),
            post(server.url, secret + "x"),
            post(server.url, secret.upper()),
        ]
        with memories(store_dir) as m:
            m.tokens.revoke("alice")
        refusals.append(post(server.url, secret))
        for status, headers, body in refusals:
            assert status == 401
            assert body == b'{"error":"unauthorized"}'
            assert headers["www-authenticate"] == "Bearer"
        assert post(server.url.replace("/mcp", "/healthz"), None)[0] == 405  # GET only


def test_the_endpoint_takes_only_posts_it_opens_no_stream_that_would_never_end(store_dir: Path) -> None:
    import urllib.error
    import urllib.request

    secret = _token(store_dir, user="alice")
    with serving(store_dir) as server:
        for method in ("GET", "DELETE"):
            asked = urllib.request.Request(
                server.url, headers={"Authorization": f"Bearer {secret}"}, method=method
            )
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(asked, timeout=10)
            assert refused.value.code == 405 and refused.value.headers["Allow"] == "POST"
            anonymous = urllib.request.Request(server.url, method=method)
            with pytest.raises(urllib.error.HTTPError) as unknown:
                urllib.request.urlopen(anonymous, timeout=10)
            assert unknown.value.code == 401  # the door first: nothing is said to a caller without a token


def test_healthz_needs_no_token_and_tells_nothing_about_the_memories(store_dir: Path) -> None:
    import json
    import urllib.request

    _token(store_dir, user="alice")
    with serving(store_dir) as server, urllib.request.urlopen(server.url.replace("mcp", "healthz")) as answer:
        health = json.loads(answer.read())
    assert set(health) == {"status", "model", "version"} and health["status"] == "ok"
    assert health["model"] in ("ready", "loading")


def test_a_second_server_on_the_store_honours_new_tokens_and_revocations_at_once(
    either_store: Path | str,
) -> None:
    _token(either_store, user="alice")

    async def scenario(first: str, second: str) -> None:
        with memories(either_store) as m:  # type: ignore[arg-type]
            late = m.tokens.add(user="alice", name="late")[0]  # made while both servers run
        async with session(first, late) as one, session(second, late) as two:
            assert (await call(one, "memory_search", {"query": "staging database"}))["hits"]
            assert (await call(two, "memory_list", {}))["memories"]
            with memories(either_store) as m:  # type: ignore[arg-type]
                m.tokens.revoke("late")  # by another process, as `remem token revoke late` does
            for url in (first, second):
                assert post(url, late)[0] == 401
            with pytest.raises(Exception):  # noqa: B017 - the SDK's client raises on a 401
                await two.call_tool("memory_list", {})

    with serving(either_store) as one, serving(either_store) as two:
        anyio.run(scenario, one.url, two.url)


def test_the_token_never_reaches_a_log_or_a_note(
    store_dir: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    secret = _token(store_dir, user="alice")
    caplog.set_level(logging.DEBUG)

    async def scenario(url: str) -> None:
        async with session(url, secret) as alice:
            await call(alice, "memory_search", {"query": "staging"})
            await call(alice, "memory_add", {"text": "a note"})
            result = await alice.call_tool("memory_edit", {"id": 999, "text": "x"})
            assert result.is_error

    with serving(store_dir) as server:
        anyio.run(scenario, server.url)
        post(server.url, secret[:-2])
        notes = "\n".join(server.notes)  # type: ignore[attr-defined]
    captured = capfd.readouterr()
    for text in (caplog.text, captured.out, captured.err, notes):
        assert secret not in text and secret[6:30] not in text


def test_a_call_that_reaches_the_tools_without_a_token_is_refused_whatever_route_it_took(
    store_dir: Path,
) -> None:
    """Defence in depth: if a request ever got past the door without a token, the server of
    `remem serve` would not serve it within its own pin (which pins nothing: an admin's view)."""
    from mcp import Client
    from mcp_support import server

    _token(store_dir, user="alice")
    app = server(store_dir)
    app.token_required = True

    async def scenario() -> None:
        async with Client(app) as client:
            result = await client.call_tool("memory_list", {})
            assert result.is_error and result.content[0].text == "unauthorized"  # type: ignore[union-attr]
            with pytest.raises(Exception, match="unauthorized"):
                await client.list_tools()

    anyio.run(scenario)


def test_a_body_too_large_is_a_one_line_413_and_a_text_too_long_a_tool_error(store_dir: Path) -> None:
    import http.client
    import urllib.parse

    secret = _token(store_dir, user="alice")
    with serving(store_dir) as server:
        where = urllib.parse.urlsplit(server.url)
        connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
        connection.putrequest("POST", where.path)  # announced, not sent: the answer comes first
        for name, value in [
            ("Authorization", f"Bearer {secret}"),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Content-Length", str(5_000_000)),
        ]:
            connection.putheader(name, value)
        connection.endheaders()
        answer = connection.getresponse()
        assert (answer.status, answer.read()) == (413, b"Request body too large")
        connection.close()
        arguments = {"name": "memory_add", "arguments": {"text": "x" * 200_000}}
        status, _, body = post(
            server.url, secret, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": arguments}
        )
        assert status == 200 and b"at most 100000 characters" in body and b"Traceback" not in body
    with memories(store_dir) as m:
        assert [x.text for x in m.iter()] == ["the staging database is on port 5433"]  # nothing added
