"""Every line a client writes to `remem mcp` gets an answer (issue 24, finding 10): over real stdio,
a raw JSON-RPC line the SDK's transport would drop in silence — a lone surrogate, a float id, a
batch, 5,000-deep nesting, not JSON — is answered with a JSON-RPC error, and the server goes on."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.mcp.stdio import problem

PARSE_ERROR, INVALID_REQUEST = -32700, -32600


#: A line, and the error (code, id) that must answer it.
UNANSWERED_BY_THE_SDK = [
    (
        '{"jsonrpc":"2.0","id":11,"method":"tools/call",'
        '"params":{"name":"memory_search","arguments":{"query":"\\ud800"}}}',
        (PARSE_ERROR, 11),
    ),
    ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', (INVALID_REQUEST, None)),
    ('{"jsonrpc":"2.0","id":true,"method":"ping"}', (INVALID_REQUEST, None)),
    ('[{"jsonrpc":"2.0","id":12,"method":"ping"}]', (INVALID_REQUEST, None)),
    (
        '{"jsonrpc":"2.0","id":13,"method":"ping","params":{"a":' + "[" * 5000 + "]" * 5000 + "}}",
        (PARSE_ERROR, None),
    ),
    (
        '{"jsonrpc":"2.0","id":14,"method":"ping","params":{"a":' + "[" * 300 + "]" * 300 + "}}",
        (PARSE_ERROR, 14),
    ),
    ('{"jsonrpc":"1.0","id":"fifteen","method":"ping"}', (INVALID_REQUEST, "fifteen")),
    ("hello", (PARSE_ERROR, None)),
]


class Stdio:
    """`remem mcp` in a subprocess, spoken to line by line."""

    def __init__(self, store: Path) -> None:
        command = [sys.executable, "-m", "remem", "mcp", "--read-only", "--store", str(store)]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(json.loads(line))

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        return self.replies.get(timeout=60)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture
def stdio(tmp_path: Path) -> Iterator[Stdio]:
    """A read-only server on a store that does not exist: nothing loads a model meanwhile."""
    server = Stdio(tmp_path / "no-store")
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    server.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}))
    assert server.reply()["id"] == 0
    server.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    yield server
    server.close()


def test_every_line_gets_an_answer_over_stdio(stdio: Stdio) -> None:
    for number, (line, (code, request_id)) in enumerate(UNANSWERED_BY_THE_SDK, start=100):
        stdio.send(line)
        stdio.send(json.dumps({"jsonrpc": "2.0", "id": number, "method": "ping"}))
        answer = stdio.reply()
        assert "error" in answer, (line[:60], answer)
        assert (answer["error"]["code"], answer["id"]) == (code, request_id), (line[:60], answer)
        assert answer["error"]["message"].startswith(("Parse error: ", "Invalid Request: "))
        assert stdio.reply() == {"jsonrpc": "2.0", "id": number, "result": {}}  # and it goes on serving
    stdio.send("")  # a blank line is no message: skipped, not answered
    stdio.send(json.dumps({"jsonrpc": "2.0", "id": 200, "method": "tools/list"}))
    assert len(stdio.reply()["result"]["tools"]) == 4
    assert stdio.replies.empty()


@given(st.text())
def test_the_check_of_a_line_never_fails(line: str) -> None:
    found = problem(line)
    assert found is None or found.code in (PARSE_ERROR, INVALID_REQUEST)
