"""The connections of ``remem serve``: bounded, timed, and never fatal.

uvicorn (0.55, h11) holds a connection whose request never finishes for as long as the client
likes, and accepts as many as the process has descriptors; when they ran out, asyncio's report of
the failed ``accept`` went to a logging handler whose lazy import failed too, and that ended the
server. Here every connection is a ``Guarded`` one: a request must arrive whole (headers and body)
within ``Limits.request_timeout`` of its first byte (or of the connection, for the first), else the
server answers 408 and closes it; beyond ``Limits.max_connections`` a new connection gets a 503 at
once and is closed (a client tries again); ``fit`` keeps that bound below the descriptor limit
(``ulimit -n``). ``Survive`` is the event loop's error handler: a failed ``accept`` for want of
descriptors (a TLS handshake not finished holds one too) is said once in a while, and asyncio tries
accepting again a second later; the server goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from remem.mcp.limits import OUT_OF_RESOURCES, Limits

#: How long a refused connection is kept for its client to read the 503 and close (seconds).
REFUSED_SECONDS = 1.0
#: How often, at most, running out of descriptors is said (seconds).
SAY_EVERY_SECONDS = 10.0
#: The errors of an ``accept`` that asyncio retries a second later.
#: Their side is through with the request: read whole, or the connection is over.
READ = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR)


def _answer(status: bytes, body: bytes, *headers: bytes) -> bytes:
    lines = [b"HTTP/1.1 " + status, b"content-type: application/json", b"connection: close", *headers]
    return b"\r\n".join([*lines, b"content-length: %d" % len(body), b"", body])


BUSY = _answer(b"503 Service Unavailable", b'{"error":"too many connections"}', b"retry-after: 1")
TOO_SLOW = _answer(b"408 Request Timeout", b'{"error":"the request did not arrive in time"}')


def guarded(limits: Limits) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol held to ``limits``."""
    return type("Guarded", (Guarded,), {"limits": limits})


class Guarded(H11Protocol):
    """A connection of uvicorn's (h11) held to ``limits``: refused beyond ``max_connections``, and
    closed (408) when a request does not arrive whole within ``request_timeout``."""

    limits = Limits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As uvicorn makes its protocols (config, server state, app state)."""
        super().__init__(*args, **kwargs)
        self._refused = False
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Serve the connection, or answer 503 and close it when there are already too many."""
        if len(self.connections) >= self.limits.max_connections:
            self._refuse(transport)
            return
        super().connection_made(transport)  # type: ignore[arg-type]
        self._arm()

    def _refuse(self, transport: asyncio.BaseTransport) -> None:
        """Answer 503 and end the connection: the client's request is read (and dropped) until it
        closes its side or ``REFUSED_SECONDS`` pass, as closing with its bytes unread would reset the
        connection and lose the answer."""
        assert isinstance(transport, asyncio.Transport)
        self._refused, self.transport = True, transport
        transport.write(BUSY)
        if transport.can_write_eof():
            transport.write_eof()
        self._deadline = self.loop.call_later(REFUSED_SECONDS, transport.close)

    def connection_lost(self, exc: Exception | None) -> None:
        """Forget the connection (a refused one was never counted)."""
        self._disarm()
        if not self._refused:
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        """Read on; the clock starts with a request's first byte and stops once it is whole."""
        if self._refused:
            return
        if self._deadline is None and self.conn.their_state is h11.IDLE:
            self._arm()
        super().data_received(data)
        if self.conn.their_state in READ:
            self._disarm()

    def on_response_complete(self) -> None:
        """As uvicorn; a pipelined request read in part meanwhile is on the clock."""
        self._disarm()
        super().on_response_complete()
        if self.conn.their_state not in (*READ, h11.IDLE):
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.limits.request_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        """The request did not arrive in time: 408 (unless an answer has begun) and close."""
        self._deadline = None
        if self.transport.is_closing() or self.conn.their_state in READ:
            return
        if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            self.transport.write(TOO_SLOW)
        self.transport.close()


class Survive:
    """The event loop's error handler: running out of descriptors is said on ``note`` at most every
    ``SAY_EVERY_SECONDS`` (asyncio accepts again a second later); anything else goes to asyncio's
    own handler, and if that fails too, it is said in one line. Nothing here raises."""

    def __init__(self, note: Callable[[str], None]) -> None:
        """Say things on ``note``."""
        self.note = note
        self._said = -SAY_EVERY_SECONDS

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Handle one error the event loop reports."""
        exc = context.get("exception")
        try:
            if isinstance(exc, OSError) and exc.errno in OUT_OF_RESOURCES:
                now = time.monotonic()
                if now - self._said >= SAY_EVERY_SECONDS:
                    self._said = now
                    self.note(
                        f"remem serve: cannot accept connections ({exc.strerror}): new ones wait; "
                        "lower --max-connections or raise the limit (ulimit -n)"
                    )
                return
            loop.default_exception_handler(context)
        except Exception:  # a report that fails must not end the server
            with contextlib.suppress(Exception):  # nowhere left to say it
                self.note(f"remem serve: {' '.join(str(context.get('message', 'error')).split())}")
