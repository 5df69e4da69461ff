"""`remem serve` as a team runs it: a real process with the bundled model, spoken to over HTTP by the
SDK's own client and by the MCP Inspector (npm). SIGTERM lets the calls under way finish and exits 0;
after kill -9 and a restart every acknowledged add is stored; plain HTTP beyond loopback needs
--insecure-http; HTTPS with --tls-cert/--tls-key."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp.server.mcpserver")

from remem.embedders.registry import BUNDLED_MODEL, bundled_files
from remem.embedders.runner import OnnxEmbedder
from serve_docs import argv, lines
from serve_support import add_token as _token
from serve_support import call, post, session
from serve_support import remem_cli as _remem
from serve_support import self_signed as _self_signed
from serve_support import serve_process as _serve

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: The Inspector release the docs show (its CLI takes --transport http and --header).
INSPECTOR = "@modelcontextprotocol/inspector@0.17"


def _long_text() -> str:
    """A text the bundled model takes a second or more to embed here, within the default size limit:
    400 lines of prose take 2 s with AVX2 int8 kernels but 0.2 s with VNNI ones (a tenfold spread;
    ``helpers.int8_kernels``), so where prose is that quick, 95,000 characters of identifiers (many
    word pieces each: 2.3 s there) instead."""
    prose = " ".join(f"paragraph {i} of the long design note about deploy keys" for i in range(400))
    embedder = OnnxEmbedder.of(BUNDLED_MODEL, bundled_files())
    started = time.monotonic()
    embedder.embed_documents([prose])
    if time.monotonic() - started >= 1.0:
        return prose
    return " ".join(f"key{i * 7919 % 104729:x}z{i:x}" for i in range(8000))[:95_000]


def test_sigterm_lets_the_call_under_way_finish_refuses_new_ones_and_exits_0(tmp_path: Path) -> None:
    store = tmp_path / "store"
    secret = _token(store, "--user", "alice")
    long_text = _long_text()  # seconds to embed (and 30 s is the longest a stop waits): SIGTERM comes mid-way
    outcome: dict[str, Any] = {}

    async def long_add(url: str) -> None:
        async with session(url, secret) as alice:
            await call(alice, "memory_search", {"query": "warm"})  # the model is loaded before the add
            outcome["started"] = time.monotonic()
            outcome["added"] = await call(alice, "memory_add", {"text": long_text})
            outcome["finished"] = time.monotonic()

    with _serve(store) as served:
        served.wait_for(r"model ready")
        worker = threading.Thread(target=anyio.run, args=(long_add, served.url))
        worker.start()
        while "started" not in outcome:
            time.sleep(0.01)
        time.sleep(0.3)  # the add is being embedded (it takes seconds)
        outcome["stopped"] = time.monotonic()
        served.process.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        host, port = re.match(r"http://([^:]+):(\d+)/", served.url).groups()  # type: ignore[union-attr]
        with pytest.raises(OSError):  # new connections are refused while the add finishes
            socket.create_connection((host, int(port)), timeout=5).close()
        worker.join(timeout=120)
        assert served.process.wait(timeout=120) == 0, served.lines
    assert outcome["added"]["embedded"] is True
    assert outcome["finished"] > outcome["stopped"]  # the add was under way when SIGTERM came
    shown = _remem(store, "show", str(outcome["added"]["id"]), "--json")
    assert json.loads(shown.stdout)["user"] == "alice"


def test_kill_9_mid_load_then_a_restart_keeps_every_acknowledged_add(tmp_path: Path) -> None:
    store = tmp_path / "store"
    secret = _token(store, "--user", "alice")
    acknowledged: list[tuple[int, str]] = []

    async def writer(url: str, number: int) -> None:
        try:
            async with session(url, secret) as alice:
                for i in range(10_000):
                    text = f"client {number} note {i} about the load test"
                    added = await call(alice, "memory_add", {"text": text})
                    acknowledged.append((added["id"], text))
        except BaseException:
            return

    async def load(url: str) -> None:
        async with anyio.create_task_group() as group:
            for number in range(4):
                group.start_soon(writer, url, number)

    with _serve(store) as served:
        served.wait_for(r"model ready")
        worker = threading.Thread(target=anyio.run, args=(load, served.url))
        worker.start()
        while len(acknowledged) < 40:
            time.sleep(0.01)
        served.process.kill()
        worker.join(timeout=120)
    assert len(acknowledged) >= 40
    with _serve(store) as again:  # a restart serves the same store on

        async def check(url: str) -> None:
            async with session(url, secret) as alice:
                listed = await call(alice, "memory_list", {"limit": 100})
                assert listed["memories"]

        anyio.run(check, again.url)
    exported = [json.loads(line) for line in _remem(store, "export").stdout.splitlines()]
    stored = {(record["id"], record["text"]) for record in exported}
    assert set(acknowledged) <= stored
    assert all(record["user"] == "alice" for record in exported)


def test_plain_http_beyond_loopback_needs_insecure_http_and_says_why(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _token(store, "--user", "alice")
    refused = _remem(store, "serve", "--host", "0.0.0.0", "--port", "0", check=False)
    assert refused.returncode == 2 and refused.stdout == ""
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "--tls-cert" in refused.stderr and "--insecure-http" in refused.stderr
    with _serve(store, "--host", "0.0.0.0", "--insecure-http") as served:
        warning = served.wait_for(r"plain HTTP on 0\.0\.0\.0.*").group(0)
        assert "unencrypted" in warning
        served.process.send_signal(signal.SIGTERM)
        assert served.process.wait(timeout=60) == 0


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _token(store, "--user", "alice")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _remem(store, "serve", "--port", str(port), check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == f"Error: cannot listen on 127.0.0.1 port {port}: Address already in use"


def test_https_with_a_certificate_and_key(tmp_path: Path) -> None:
    store = tmp_path / "store"
    secret = _token(store, "--user", "alice")
    cert, key = _self_signed(tmp_path)
    half = _remem(store, "serve", "--port", "0", "--tls-cert", str(cert), check=False)
    assert half.returncode == 2 and "--tls-key" in half.stderr
    swapped = _remem(
        store, "serve", "--port", "0", "--tls-cert", str(key), "--tls-key", str(cert), check=False
    )
    assert swapped.returncode == 2
    assert swapped.stderr.strip() == (
        "Error: cannot load the TLS certificate and key: "
        "they are not a PEM certificate and its PEM private key"
    )
    with _serve(store, "--tls-cert", str(cert), "--tls-key", str(key)) as served:
        assert served.url.startswith("https://127.0.0.1:")

        async def scenario(url: str) -> None:
            async with session(url, secret, verify=str(cert)) as alice:
                await call(alice, "memory_add", {"text": "TLS works"})

        anyio.run(scenario, served.url)


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx (Node.js) is not installed")
def test_the_mcp_inspector_cli_lists_and_calls_the_tools_with_a_bearer_token(tmp_path: Path) -> None:
    """The two Inspector lines of docs/serve.md, as they are there (with a real URL and token)."""
    store = tmp_path / "store"
    secret = _token(store, "--user", "alice")
    _remem(store, "add", "The team's deploy key rotates every 90 days")
    listing, searching = lines(f"npx {INSPECTOR} --cli ")
    assert listing.endswith(" --method tools/list") and " --method tools/call " in searching

    def inspector(command: list[str]) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "npm_config_yes": "true"}  # npx installs without asking
        return subprocess.run(command, check=False, capture_output=True, text=True, timeout=600, env=env)

    with _serve(store) as served:
        served.wait_for(r"model ready")
        listed = inspector(argv(listing, served.url, secret))
        if listed.returncode != 0 and "npm" in listed.stderr and "ERR" in listed.stderr:
            pytest.skip(f"the Inspector could not be installed from npm: {listed.stderr[-300:]}")
        assert listed.returncode == 0, listed.stderr
        tools = {tool["name"]: tool for tool in json.loads(listed.stdout)["tools"]}
        assert len(tools) == 7 and "user" not in tools["memory_search"]["inputSchema"]["properties"]
        found = inspector(argv(searching, served.url, secret))
        assert found.returncode == 0, found.stderr
        hits = json.loads(found.stdout)["structuredContent"]["hits"]
        assert hits and hits[0]["text"] == "The team's deploy key rotates every 90 days"
        adding = ["tools/call", "--tool-name", "memory_add", "--tool-arg", "text=alice's staging port: 5433"]
        added = inspector(argv(listing, served.url, secret)[:-1] + adding)  # instead of tools/list
        assert added.returncode == 0, added.stderr
        refused = inspector(argv(listing, served.url, "remem_wrong"))
        assert refused.returncode != 0 and secret not in refused.stdout + refused.stderr
    exported = [json.loads(line) for line in _remem(store, "export").stdout.splitlines()]
    assert [(r["text"], r["user"]) for r in exported][-1] == ("alice's staging port: 5433", "alice")


def test_two_servers_on_one_postgres_store_share_the_load_and_a_cli_revocation(postgres_url: str) -> None:
    store = postgres_url
    alice = _token(store, "--user", "alice")
    carol = _token(store, "--user", "carol", "--name", "carol")
    acknowledged: list[tuple[int, str]] = []

    async def writer(url: str, number: int) -> None:
        async with session(url, alice) as mcp:
            for i in range(8):
                text = f"client {number} note {i} about the two servers"
                acknowledged.append(((await call(mcp, "memory_add", {"text": text}))["id"], text))
                assert (await call(mcp, "memory_search", {"query": "two servers", "k": 3}))["hits"]

    async def load(urls: list[str]) -> None:
        async with anyio.create_task_group() as group:
            for number in range(4):
                group.start_soon(writer, urls[number % 2], number)
        for url in urls:  # carol's token works on both, until the CLI revokes it
            async with session(url, carol) as mcp:
                assert (await call(mcp, "memory_list", {}))["memories"] == []
        _remem(store, "token", "revoke", "carol")
        for url in urls:
            assert post(url, carol)[0] == 401
            assert post(url, alice)[0] == 200

    with _serve(store) as one, _serve(store) as two:
        one.wait_for(r"model ready")
        two.wait_for(r"model ready")
        anyio.run(load, [one.url, two.url])
    exported = [json.loads(line) for line in _remem(store, "export").stdout.splitlines()]
    assert {(r["id"], r["text"]) for r in exported} == set(acknowledged)
    assert {r["user"] for r in exported} == {"alice"}
