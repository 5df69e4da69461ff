"""Helpers of the `remem serve` tests: a real HTTP server (uvicorn on a free port, in a thread of the
test, with the fake embedder), `remem serve` as a real process, and the SDK's own Streamable HTTP
client, with a bearer token."""

from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from remem.mcp.http import HttpServer, Listener
from remem.mcp.server import build_server
from remem.testing import FakeEmbedder


@contextmanager
def serving(store: Path | str, **listener: Any) -> Iterator[HttpServer]:
    """``remem serve`` for ``store`` on a free port of 127.0.0.1 (or ``listener``'s), on a thread,
    stopped (gracefully) afterwards; its notes are kept in ``server.notes``."""
    notes: list[str] = []
    listener.setdefault("port", 0)
    app = build_server(store, embedder=FakeEmbedder(), note=notes.append)
    http = HttpServer(app, Listener(**listener), note=notes.append)
    http.notes = notes  # type: ignore[attr-defined]
    thread = threading.Thread(target=http.serve, name="remem-serve-test", daemon=True)
    thread.start()
    try:
        _wait_until_up(http.url)
        yield http
    finally:
        http.stop()
        thread.join(timeout=60)
        assert not thread.is_alive(), "the server did not stop"


def _wait_until_up(url: str) -> None:
    for _ in range(500):
        try:
            with urllib.request.urlopen(url.replace("/mcp", "/healthz"), timeout=5):
                return
        except (urllib.error.URLError, ConnectionError):
            threading.Event().wait(0.01)
    raise AssertionError(f"{url} did not come up")


@asynccontextmanager
async def session(url: str, token: str | None, **client: Any) -> AsyncIterator[ClientSession]:
    """An initialised MCP session with the server at ``url``, every request carrying ``token`` (and
    ``client``'s headers, as a client's configuration gives them)."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    headers.update(client.pop("headers", {}))
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60, **client) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as mcp_session,
    ):
        await mcp_session.initialize()
        yield mcp_session


async def call(
    mcp_session: ClientSession, name: str, arguments: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A tool's structured result; the call must succeed."""
    result = await mcp_session.call_tool(name, arguments or {})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def fail(mcp_session: ClientSession, name: str, arguments: dict[str, Any] | None = None) -> str:
    """A tool's one-line error message; the call must fail."""
    result = await mcp_session.call_tool(name, arguments or {})
    assert result.is_error, result.structured_content
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert text and "\n" not in text and "Traceback" not in text, text
    return text


def post(
    url: str, token: str | None, body: dict[str, Any] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One raw JSON-RPC POST (a tools/list by default): status, headers (lower-case names), body."""
    message = body or {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, json.dumps(message).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, {k.lower(): v for k, v in answer.headers.items()}, answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, {k.lower(): v for k, v in refused.headers.items()}, refused.read()


def remem_cli(store: Path | str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`remem ARGS --store STORE` in a process of its own; it must exit 0 unless not ``check``."""
    done = subprocess.run(
        [sys.executable, "-m", "remem", *args, "--store", str(store)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert not check or done.returncode == 0, done.stderr
    return done


class Served:
    """A running `remem serve` process: its URL, and its stderr lines so far."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: list[str] = []
        self.url = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 120) -> re.Match[str]:
        """The first stderr line matching ``pattern`` (waiting for it; AssertionError if none comes)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                found = re.search(pattern, line)
                if found:
                    return found
            if self.process.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.02)
        raise AssertionError(f"no line like {pattern!r} in {self.lines}")


@contextmanager
def serve_process(store: Path | str, *args: str, port: int = 0, **popen: Any) -> Iterator[Served]:
    """`remem serve --store STORE --port PORT ARGS` as a real process (``popen``: more arguments of
    ``subprocess.Popen``, e.g. ``preexec_fn``), once it says its URL; killed afterwards if it still runs."""
    process = subprocess.Popen(
        [sys.executable, "-m", "remem", "serve", "--store", str(store), "--port", str(port), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )
    served = Served(process)
    try:
        served.url = served.wait_for(r"remem serve: (https?://\S+/mcp)").group(1)
        yield served
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=60)


def add_token(store: Path | str, *args: str) -> str:
    """A new token from `remem token add ARGS` (the real CLI)."""
    return remem_cli(store, "token", "add", *args).stdout.strip()


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (PEM files in ``directory``); skips without the
    cryptography package."""
    x509 = pytest.importorskip("cryptography.x509")
    import ipaddress

    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    cert, private = directory / "cert.pem", directory / "key.pem"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert, private
