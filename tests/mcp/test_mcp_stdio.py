"""`remem mcp` as an assistant runs it: a subprocess spoken to over stdio by the SDK's own client,
with the real bundled model — the time to a handshake and tools/list (printed, not bounded: about
0.5 s on an idle machine, once 7.7 s in CI while other tests installed and ran servers;
tests/mcp/test_mcp_handshake.py shows the handshake does not wait for the model), a search asked first thing
(it waits for the model, up to a bound), adds before the model is loaded, and the CLI and the
running server seeing each other's writes."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_support import FIRST_STORED_PENDING

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@asynccontextmanager
async def _server(
    store: Path, errlog: IO[str], env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    command = [sys.executable, "-m", "remem", "mcp", "--store", str(store)]
    params = StdioServerParameters(command=command[0], args=command[1:], env=env or dict(os.environ))
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def _call(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    assert not result.is_error and result.structured_content is not None, result.content
    return result.structured_content


async def _until_warm(session: ClientSession) -> None:
    """Search until the answers come from every lane (the model and index are loaded)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (await _call(session, "memory_search", {"query": "anything"}))["lane_note"] is None:
            return
        await anyio.sleep(0.05)
    raise AssertionError("the model did not load within 60 s")


def _cli(store: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "remem", *args, "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_it_answers_fast_and_sees_the_clis_writes_and_the_cli_its(store_dir: Path, tmp_path: Path) -> None:
    _cli(store_dir, "add", "Postgres 16 runs on the main box")

    async def scenario() -> None:
        with (tmp_path / "stderr.txt").open("w+") as errlog:
            started = time.perf_counter()
            async with _server(store_dir, errlog) as session:
                tools = await session.list_tools()
                answered = time.perf_counter() - started
                print(f"remem mcp over stdio: handshake and tools/list in {answered:.2f} s")
                assert len(tools.tools) == 7
                await _until_warm(session)
                _cli(store_dir, "add", "The billing service retries a failed charge three times")
                query = {"query": "how often is a declined payment tried again", "k": 1}
                found = await _call(session, "memory_search", {**query, "mode": "vector"})
                assert found["hits"][0]["text"].startswith("The billing service retries")
                added = await _call(session, "memory_add", {"text": "Staging runs on the small box"})
                assert added["embedded"]
                cli_found = _cli(
                    store_dir, "search", "--json", "-k", "1", "--mode", "vector", "where is staging"
                )
                assert json.loads(cli_found)["id"] == added["id"]
            errlog.seek(0)
            said = errlog.read()
        assert "remem mcp: serving over stdio (nothing pinned)" in said and "Traceback" not in said

    anyio.run(scenario)


def test_an_add_before_the_model_loads_is_stored_at_once_and_found_by_meaning_by_the_next_search(
    store_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_MODELS", str(tmp_path / "models"))  # a machine that has said no tip yet
    first = subprocess.run(
        [sys.executable, "-m", "remem", "add", "a first store", "--store", str(tmp_path / "first")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "Better search: `remem model pull bge-small-en-v1.5`" in first.stderr  # said once per machine

    async def scenario() -> None:
        with (tmp_path / "stderr.txt").open("w+") as errlog:
            async with _server(store_dir, errlog) as session:  # a new store, made by the server
                added = await _call(session, "memory_add", {"text": "The deploy key rotates every 90 days"})
                assert added == FIRST_STORED_PENDING  # the warm-up waits for it
                query = {"query": "how often do credentials change", "mode": "vector", "k": 1}
                found = await _call(session, "memory_search", query)  # waits for the warm-up to embed it
                assert found["lane_note"] is None and [hit["id"] for hit in found["hits"]] == [1]
                corrected = {"text": "The deploy key rotates every 30 days since the audit", "supersedes": 1}
                added = await _call(session, "memory_add", corrected)  # the model is loaded: embedded
                assert (added["supersedes"], added["embedded"]) == (1, True)
                found = await _call(session, "memory_search", query)
                assert [hit["id"] for hit in found["hits"]] == [added["id"]]  # the old fact left out
            errlog.seek(0)
            said = errlog.read()
        assert f"New store at {store_dir}, using the bundled model all-minilm-l6-v2 (English).\n" in said
        assert "Better search" not in said  # the CLI said it on this machine already
        assert "; 1 pending memory embedded" in said and "Traceback" not in said

    anyio.run(scenario)


MEMORY = "The billing service retries a failed charge three times"
PARAPHRASE = "how often is a declined payment tried again"  # no word in common with MEMORY


@pytest.mark.parametrize("tool", ["memory_search", "memory_context"])
def test_a_paraphrase_asked_first_thing_is_found_by_meaning(
    store_dir: Path, tmp_path: Path, tool: str
) -> None:
    """A client that starts the server for one call (the MCP Inspector's CLI mode, a script) is
    answered by meaning: the first search waits for the model instead of answering by keyword."""
    _cli(store_dir, "add", MEMORY)
    _cli(store_dir, "add", "Staging runs on the small box")
    arguments = {
        "query": PARAPHRASE,
        **({"k": 1} if tool == "memory_search" else {"recent": 0, "similar": 1}),
    }

    async def scenario() -> None:
        with (tmp_path / "stderr.txt").open("w+") as errlog:
            async with _server(store_dir, errlog) as session:
                found = await _call(session, tool, arguments)  # the first call, right after the handshake
        assert found["lane_note"] is None
        texts = [hit["text"] for hit in found["hits"]] if tool == "memory_search" else [found["prompt"]]
        assert len(texts) == 1 and MEMORY in texts[0]

    anyio.run(scenario)


def _slow_model(tmp_path: Path) -> dict[str, str]:
    """The environment of a server whose ONNX session takes SEARCH_WAIT_SECONDS + 3 s more to load
    (a sitecustomize wraps remem's loader with a sleep): slower than the bound, however busy the
    machine is, since the search falls back when the bound has passed, before the model is loaded."""
    site = tmp_path / "slow_site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import time\n"
        "from remem.embedders import sessions\n"
        "from remem.mcp.service import SEARCH_WAIT_SECONDS\n"
        "_load = sessions.session_of\n"
        "def session_of(*args, **kwargs):\n"
        "    time.sleep(SEARCH_WAIT_SECONDS + 3)\n"
        "    return _load(*args, **kwargs)\n"
        "sessions.session_of = session_of\n"
    )
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def test_a_model_slower_than_the_bound_leaves_the_first_search_on_keywords_and_other_calls_unheld(
    store_dir: Path, tmp_path: Path
) -> None:
    _cli(store_dir, "add", MEMORY)

    async def scenario() -> None:
        with (tmp_path / "stderr.txt").open("w+") as errlog:
            async with _server(store_dir, errlog, _slow_model(tmp_path)) as session:
                first: dict[str, Any] = {}

                async def search() -> None:
                    first.update(await _call(session, "memory_search", {"query": PARAPHRASE}))

                async with anyio.create_task_group() as group:
                    group.start_soon(search)
                    await anyio.sleep(0.2)  # the search is sent first (and waits for the model)
                    listed = await _call(session, "memory_list", {})
                    assert not first  # answered while the search was waiting
                assert [m["text"] for m in listed["memories"]] == [MEMORY]
                assert first["mode"] == "keyword" and first["hits"] == []  # no word in common
                assert first["lane_note"] == "model loading; keyword results only"
                await _until_warm(session)
                later = await _call(session, "memory_search", {"query": PARAPHRASE, "k": 1})
                assert [hit["text"] for hit in later["hits"]] == [MEMORY]
            errlog.seek(0)
            said = errlog.read()
        assert "model ready in" in said and "Traceback" not in said

    anyio.run(scenario)


def test_a_server_stopped_while_a_search_waits_for_the_model_exits(store_dir: Path, tmp_path: Path) -> None:
    """stdin closed while the first search waits for a slow model: the server answers or drops the
    search, and exits by itself, cleanly (the client does not have to kill it)."""
    _cli(store_dir, "add", MEMORY)
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "memory_search", "arguments": {"query": PARAPHRASE}},
        },
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "remem", "mcp", "--store", str(store_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_slow_model(tmp_path),
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(json.dumps(lines[0]) + "\n")
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["id"] == 1
    rest = "".join(json.dumps(line) + "\n" for line in lines[1:])  # stdin closes after them
    try:  # a hang, not a duration, is what the timeout catches: the model sleeps 6 s
        _, said = server.communicate(rest, timeout=120)
    finally:
        server.kill()
    assert server.returncode == 0 and "Traceback" not in said, said


def test_two_servers_and_a_cli_writer_on_one_store_find_every_memory(store_dir: Path, tmp_path: Path) -> None:
    """Each of three writers adds N memories with a word of its own; every side then finds all 3N,
    by meaning and by that word (no write is lost, none is missed by a warm server)."""
    count = 8
    _cli(store_dir, "add", "A first memory so that the store exists")
    texts = {
        side: [f"Writer {side} noted fact {i} about the {word} rollout" for i in range(count)]
        for side, word in (("a", "zephyr"), ("b", "quokka"), ("cli", "marmot"))
    }

    async def scenario() -> None:
        with (tmp_path / "a.txt").open("w+") as log_a, (tmp_path / "b.txt").open("w+") as log_b:
            async with _server(store_dir, log_a) as one, _server(store_dir, log_b) as two:
                await _until_warm(one)
                await _until_warm(two)
                for i in range(count):  # interleaved: the three writers take turns on the store
                    await _call(one, "memory_add", {"text": texts["a"][i]})
                    await _call(two, "memory_add", {"text": texts["b"][i]})
                    _cli(store_dir, "add", texts["cli"][i])
                for session in (one, two):
                    for word in ("zephyr", "quokka", "marmot"):
                        query = {"query": f"{word} rollout", "k": 50, "mode": "keyword"}
                        hits = (await _call(session, "memory_search", query))["hits"]
                        assert len([h for h in hits if word in h["text"]]) == count
                    meaning = {"query": "what did writer cli note about the marmot rollout", "k": 3}
                    assert "marmot" in (await _call(session, "memory_search", meaning))["hits"][0]["text"]
        exported = [json.loads(line)["text"] for line in _cli(store_dir, "export").splitlines()]
        assert sorted(t for t in exported if t.startswith("Writer")) == sorted(
            t for side in texts.values() for t in side
        )
        assert _cli(store_dir, "doctor").count("ok") >= 6

    anyio.run(scenario)


def test_a_store_of_the_earlier_model_file_keeps_its_writes_and_names_the_command_that_re_embeds_it(
    store_dir: Path, tmp_path: Path
) -> None:
    """A store whose vectors came from the 8-bit file of earlier releases (its stamp): an add is kept
    without a vector, a search answers from keywords with a note naming `remem reindex --model …`;
    after that command the memory added meanwhile is found by meaning."""
    _cli(store_dir, "add", "Postgres 16 runs on the main box")
    earlier = "b5f035bc8a39f1dd8c54d1fe71fa07a98236a23b87070df346ca6a604fa93831"  # the 8-bit file
    with sqlite3.connect(store_dir / "memories.sqlite3") as db:
        db.execute("UPDATE store_meta SET value = ? WHERE key = 'model_sha256'", (earlier,))
    fix = "`remem reindex --model all-minilm-l6-v2`"

    async def before_the_fix() -> None:
        with (tmp_path / "stderr.txt").open("w+") as errlog:
            async with _server(store_dir, errlog) as session:
                added = await _call(session, "memory_add", {"text": "Lunch is at noon on Fridays"})
                assert (added["id"], added["embedded"]) == (2, False)
                found = await _call(session, "memory_search", {"query": "Postgres"})
                assert found["mode"] == "keyword" and fix in found["lane_note"]
                assert [hit["id"] for hit in found["hits"]] == [1]

    async def after_the_fix() -> None:
        with (tmp_path / "stderr.txt").open("w+") as errlog:
            async with _server(store_dir, errlog) as session:
                await _until_warm(session)
                found = await _call(session, "memory_search", {"query": "when do we eat", "mode": "vector"})
                assert found["hits"][0]["id"] == 2

    anyio.run(before_the_fix)
    _cli(store_dir, "reindex", "--model", "all-minilm-l6-v2")
    anyio.run(after_the_fix)
