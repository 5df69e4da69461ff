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
from mcp_types import ErrorData, JSONRPCError

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
    # issue 46, finding 7: an id (or a method, or a key) holding a lone surrogate; echoing the id ended
    # the server (the writer cannot encode it)
    ('{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', (PARSE_ERROR, None)),
    ('{"jsonrpc":"2.0","id":"a\\udfff","method":"tools/list"}', (PARSE_ERROR, None)),
    ('{"jsonrpc":"2.0","id":16,"method":"\\ud800"}', (PARSE_ERROR, 16)),
    ('{"jsonrpc":"2.0","id":17,"method":"ping","params":{"\\udc00":[{"\\ud800":1}]}}', (PARSE_ERROR, 17)),
    ('{"jsonrpc":"2.0","id":1e400,"method":"ping"}', (INVALID_REQUEST, None)),
    ('{"jsonrpc":"2.0","id":{"a":[1,{"b":null}]},"method":"ping"}', (INVALID_REQUEST, None)),
    ('{"jsonrpc":"2.0","id":["\\ud800"],"method":{"x":[[]]}}', (PARSE_ERROR, None)),
    ('{"jsonrpc":"2.0","id":"' + "i" * 100_000 + '","method":[1]}', (INVALID_REQUEST, "i" * 100_000)),
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

    def send(self, line: str | bytes) -> None:
        assert self.process.stdin is not None
        raw = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
        self.process.stdin.write(raw + b"\n")
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


#: Lines the SDK reads itself (bytes that are not UTF-8 read as U+FFFD), and the answer's id.
ANSWERED_BY_THE_SDK = [
    (b'{"jsonrpc":"2.0","id":"\xff\xfe","method":"ping"}', "\ufffd\ufffd"),
    (b'{"jsonrpc":"2.0","id":"\xed\xa0\x80","method":"ping"}', "\ufffd\ufffd\ufffd"),  # a surrogate's bytes
    (b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % 10**30, 10**30),
    (b'{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}', -9223372036854775809),
]


def test_bytes_that_are_not_utf8_and_huge_ids_are_answered_and_it_goes_on(stdio: Stdio) -> None:
    for number, (line, request_id) in enumerate(ANSWERED_BY_THE_SDK, start=300):
        stdio.send(line)
        stdio.send(json.dumps({"jsonrpc": "2.0", "id": number, "method": "ping"}))
        assert stdio.reply()["id"] == request_id, line
        assert stdio.reply() == {"jsonrpc": "2.0", "id": number, "result": {}}
    stdio.send(b"\xff\xfe\x00 not json \xc3")
    assert stdio.reply()["error"]["code"] == PARSE_ERROR
    stdio.send(json.dumps({"jsonrpc": "2.0", "id": 400, "method": "tools/list"}))
    assert len(stdio.reply()["result"]["tools"]) == 4
    assert stdio.process.poll() is None


@given(st.text())
def test_the_check_of_a_line_never_fails(line: str) -> None:
    found = problem(line)
    assert found is None or found.code in (PARSE_ERROR, INVALID_REQUEST)


#: Text with lone surrogates among other characters (``st.text()`` leaves them out).
_HOSTILE_TEXT = st.text(max_size=8) | st.builds(
    "{}{}{}".format, st.text(max_size=3), st.characters(categories=["Cs"]), st.text(max_size=3)
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _HOSTILE_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_HOSTILE_TEXT, inner, max_size=3),
    max_leaves=8,
)


@given(
    st.fixed_dictionaries(
        {"jsonrpc": st.sampled_from(["2.0", "1.0"]), "id": _HOSTILE_TEXT | _JSON, "method": _JSON},
        optional={"params": _JSON},
    )
)
def test_the_answer_to_any_message_can_be_written(message: dict[str, Any]) -> None:
    """Whatever the shape, the error that answers it encodes as UTF-8 (the writer's need: an id with a
    lone surrogate, echoed back, ended the server — issue 46, finding 7)."""
    found = problem(json.dumps(message))
    if found is not None:
        answer = ErrorData(code=found.code, message=found.message)
        error = JSONRPCError(jsonrpc="2.0", id=found.id, error=answer)
        error.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
