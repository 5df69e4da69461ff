"""remem's reader of stdin in front of the SDK's stdio transport: every line gets an answer.

The SDK's transport (mcp 2.3) drops, without a reply, each line it cannot read as one JSON-RPC
message — not JSON, a string with a lone surrogate escape (``"\\ud800"``), nesting deeper than its
parser takes, a batch array, a wrong field — and reads a request whose id is neither a string nor an
integer (``1.5``, ``true``, ``null``) as a notification, which gets no reply either: the client
waits forever. This reader checks each line first: it passes every message the SDK reads as it is
meant unchanged, and answers the others itself with a JSON-RPC error (-32700 parse error, -32600
invalid request; the request's id when there is one to read and write back, else null: an id holding
a lone surrogate cannot be written as UTF-8, and echoing it ended the server), written by the SDK's
own writer so that frames never interleave. Blank lines are skipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from io import TextIOWrapper
from typing import IO, Any, NamedTuple, cast

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError


class Problem(NamedTuple):
    """Why a line is not a message the SDK reads as meant, as the error to answer it with."""

    id: int | str | None
    code: int
    message: str


def problem(line: str) -> Problem | None:
    """None when the SDK reads ``line`` as the message it is, else the error that answers it."""
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        return _refused(line, exc)
    if isinstance(message, JSONRPCNotification):  # rare and small: read it again for an id it dropped
        value, _ = _loads(line)
        if isinstance(value, dict) and "id" in value:
            return Problem(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    return None


def _refused(line: str, error: ValidationError) -> Problem:
    """The answer to a line the SDK's parser or its message types refused."""
    value, unread = _loads(line)
    if unread is not None:
        return Problem(None, PARSE_ERROR, f"Parse error: {unread}")
    if isinstance(value, list):
        return Problem(None, INVALID_REQUEST, "Invalid Request: batches are not supported; send one per line")
    asked = value.get("id") if isinstance(value, dict) and "method" in value else None
    writable = type(asked) is int or (isinstance(asked, str) and not _lone_surrogate(asked))
    request_id = asked if writable else None
    unparsed = [detail["msg"] for detail in error.errors() if detail["type"] == "json_invalid"]
    if unparsed:  # Python reads it, the SDK's parser does not (NaN, nesting deeper than it takes…)
        why = "a string holds a lone surrogate" if _lone_surrogate(value) else unparsed[0]
        return Problem(request_id, PARSE_ERROR, f"Parse error: {why}")
    return Problem(request_id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")


def _loads(line: str) -> tuple[Any, str | None]:
    """Python's reading of ``line`` (it takes lone surrogates, and deeper nesting than the SDK's
    parser), or why there is none."""
    try:
        return json.loads(line), None
    except RecursionError:
        return None, "nested too deeply"
    except ValueError:
        return None, "not one JSON value"


def _lone_surrogate(value: Any) -> bool:
    """Whether a string in ``value`` holds a lone surrogate (text that is not Unicode)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (ValueError, RecursionError):
        pass
    return False


class CheckedLines:
    """The lines of the protocol's stdin for the SDK's reader, with the lines it would leave
    unanswered answered on ``replies`` (set once the transport is up) instead of passed on."""

    def __init__(self, source: IO[bytes]) -> None:
        """Read ``source`` as UTF-8, bytes that are not read as U+FFFD (as the SDK does)."""
        self._file = anyio.wrap_file(TextIOWrapper(source, encoding="utf-8", errors="replace"))
        self._replies: Any = None
        self._up = anyio.Event()

    def answer_on(self, replies: Any) -> None:
        """Write the errors to ``replies``, the transport's write stream."""
        self._replies = replies
        self._up.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._file:
            if not line.strip():
                continue
            try:
                found = problem(line)
            except Exception:  # a bug of this check: the SDK reads the line as it always did
                found = None
            if found is None:
                yield line
                continue
            await self._up.wait()
            answer = ErrorData(code=found.code, message=found.message)
            error = JSONRPCError(jsonrpc="2.0", id=found.id, error=answer)
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self._replies.send(SessionMessage(error))


@contextlib.contextmanager
def _protocol_stdin() -> Iterator[IO[bytes]]:
    """The protocol's stdin on a descriptor of its own while fd 0 reads the null device (as the SDK
    does for the stdin it claims: nothing else in the process reads the protocol); restored after."""
    try:
        private = os.dup(0)
        null = os.open(os.devnull, os.O_RDONLY)
    except OSError:
        yield sys.stdin.buffer
        return
    try:
        os.dup2(null, 0)
        yield os.fdopen(private, "rb", closefd=False)  # a worker thread may still block on it
    finally:
        os.close(null)
        os.dup2(private, 0)


async def serve_stdio(server: MCPServer[Any]) -> None:
    """Serve ``server`` over stdin/stdout (``MCPServer.run_stdio_async`` with ``CheckedLines``)."""
    with _protocol_stdin() as source:
        lines = CheckedLines(source)
        async with stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (read_stream, write_stream):
            lines.answer_on(write_stream)
            lowlevel = server._lowlevel_server  # what the SDK's own run_stdio_async runs
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
