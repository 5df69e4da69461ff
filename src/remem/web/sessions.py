"""The page's sign-in sessions: a random id in an HttpOnly cookie, the rest kept in the server.

A session holds its token's secret in the server's memory only (never in the cookie, a URL or a log),
so that every request checks the token again (``Tokens.verify``): a token revoked or expired since
sign-in ends its session at the next request. Each session has its own CSRF token, which every form
carries and every POST must give back. Sessions idle for ``IDLE_SECONDS`` end; past
``MAX_SESSIONS`` the longest idle one ends first. A restarted server has no sessions: sign in again.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field

#: The cookie that names a session, and the one that carries the sign-in form's CSRF token.
SESSION_COOKIE, SIGNIN_COOKIE = "remem_session", "remem_signin"
#: A session unused this long (seconds) ends.
IDLE_SECONDS = 12 * 3600
#: At most this many sessions at once (the longest idle one ends first).
MAX_SESSIONS = 10_000


def new_secret() -> str:
    """A random, URL-safe value that cannot be guessed (a session id, a CSRF token)."""
    return secrets.token_urlsafe(32)


def same(given: str | None, expected: str) -> bool:
    """Whether ``given`` is ``expected``, compared in constant time (None never is)."""
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


@dataclass
class Session:
    """One signed-in browser: its token's secret (kept here only; None: signed in on this computer
    with the one-time code of ``remem ui``), its CSRF token, last use."""

    secret: str | None = field(repr=False)
    csrf: str = field(default_factory=new_secret, repr=False)
    used: float = field(default_factory=time.monotonic)


class Sessions:
    """The signed-in sessions of one server, by id; safe under threads."""

    def __init__(
        self, idle_seconds: float = IDLE_SECONDS, limit: int = MAX_SESSIONS, code: str | None = None
    ) -> None:
        """Sessions that end after ``idle_seconds`` unused, at most ``limit`` at once; ``code``: the
        one-time code that signs one browser in without a token (``remem ui``), or None."""
        self._idle, self._limit, self._code = idle_seconds, limit, code
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def redeem(self, code: str) -> bool:
        """Whether ``code`` is the one-time code, still unused; it is used up by the first that is."""
        with self._lock:
            if self._code is None or not same(code, self._code):
                return False
            self._code = None
            return True

    def start(self, secret: str | None) -> tuple[str, Session]:
        """A new session for the token ``secret`` (None: of the one-time code), always with a new id:
        its id and it."""
        session_id, session = new_secret(), Session(secret)
        with self._lock:
            self._sessions[session_id] = session
            if len(self._sessions) > self._limit:
                oldest = min(self._sessions, key=lambda key: self._sessions[key].used)
                del self._sessions[oldest]
        return session_id, session

    def get(self, session_id: str | None) -> Session | None:
        """The live session of ``session_id`` (its last use now), or None (unknown, or idle too long:
        then it ends)."""
        if not session_id:
            return None
        now = time.monotonic()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is None:
                return None
            if now - session.used > self._idle:
                del self._sessions[session_id]
                return None
            session.used = now
            return session

    def end(self, session_id: str | None) -> None:
        """End the session of ``session_id`` (nothing when there is none)."""
        with self._lock:
            self._sessions.pop(session_id or "", None)

    def __len__(self) -> int:
        """How many sessions there are."""
        return len(self._sessions)
