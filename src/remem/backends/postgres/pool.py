"""The open connections of one PostgreSQL store, lent to one transaction at a time.

A transaction takes an idle connection (or opens a new one) and gives it back when it ends, so
threads sharing a store never share a connection. Up to ``KEEP_IDLE`` idle connections are kept;
a connection that is broken, closed or still inside a transaction when given back is closed
instead. After ``os.fork()`` the child never uses, nor closes, a connection of its parent (they
share the socket): it forgets them all and opens its own.

Why not ``psycopg_pool`` (the psycopg project's pool; checked against 3.3.3, issue 47): it lacks
three things this store relies on. (1) After ``os.fork()`` its child is handed the parent's open
connection (one socket, two processes: both sessions corrupt); here the child opens its own.
(2) A kept connection that died (a restarted server, a terminated backend) is either handed out
dead or, with ``check=ConnectionPool.check_connection``, probed by a round trip at every checkout;
here ``begun`` notices it on the transaction's first statement and replaces it once, for free.
(3) It runs four threads per open pool (a scheduler and three workers) where a ``Memories`` needs
none. Nor is it faster: 3,000 ``SELECT 1`` transactions in a row on one 2-core machine took 245-554
us each here, 514-845 us with psycopg_pool unchecked and 592-1,458 us checked (three rounds,
interleaved, same server); opening and closing: 8.5 ms here, 13.0 ms. The ``txid_status`` settling
of a COMMIT that got no answer (``fate``) is remem's own either way.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from remem.errors import StoreError

if TYPE_CHECKING:
    import psycopg

    Connection = psycopg.Connection[tuple[Any, ...]]

#: Idle connections kept open for the next transactions (more are closed when given back).
KEEP_IDLE = 8


class Pool:
    """Connections to one store: ``take`` one for a transaction, ``give_back`` it after."""

    def __init__(self, first: Connection, open_new: Callable[[], Connection], shown: str) -> None:
        """Start with the open connection ``first``; ``open_new`` opens another (StoreError when it
        cannot); ``shown`` names the store in messages."""
        self._open_new = open_new
        self._shown = shown
        self._lock = threading.Lock()
        self._idle: list[Connection] = [first]
        self._lent: set[Connection] = set()
        #: A parent's connections, after a fork: kept (never closed here: the parent still uses them).
        self._inherited: list[Connection] = []
        self.pid = os.getpid()
        self.closed = False

    def take(self, *, new: bool = False) -> tuple[Connection, bool]:
        """An idle connection (unless ``new``), else a new one, with True when it is new (a kept
        one may have died since it was last used: a restarted server, a terminated backend).
        StoreError once closed, or when no new connection can be opened."""
        self.after_fork()
        with self._lock:
            if self.closed:
                raise StoreError(f"the store at {self._shown} was closed; open it again to use it")
            conn = self._idle.pop() if self._idle and not new else None
        fresh = conn is None
        if conn is None:
            conn = self._open_new()
        with self._lock:
            self._lent.add(conn)
        return conn, fresh

    def give_back(self, conn: Connection) -> None:
        """Keep ``conn`` for the next transaction if it is open, idle and ours; close it otherwise."""
        self.after_fork()
        if any(conn is inherited for inherited in self._inherited):
            return  # the parent's: never touched
        with self._lock:
            self._lent.discard(conn)
            keep = (
                not self.closed
                and not conn.closed
                and not conn.broken
                and conn.info.transaction_status == 0  # idle: no transaction left open
                and len(self._idle) < KEEP_IDLE
            )
            if keep:
                self._idle.append(conn)
        if not keep:
            with contextlib.suppress(Exception):
                conn.close()

    def begun(self, begin: str, prepare: Callable[[Connection], None]) -> tuple[Connection, Any]:
        """A connection with ``prepare`` done and ``begin`` run on it, and the value ``begin``
        selected last (a transaction id, a snapshot's stamp), if any. A kept connection found dead
        (a restarted server, a terminated backend) is replaced by a new one, once: nothing sent on it
        was applied."""
        conn, fresh = self.take()
        while True:
            try:
                prepare(conn)
                return conn, last_value(conn, begin)
            except BaseException as exc:
                self.give_back(conn)
                if fresh or not isinstance(exc, Exception) or not (conn.closed or conn.broken):
                    raise
                conn, fresh = self.take(new=True)

    def fate(self, xid: int, patience: float) -> str | None:
        """What became of transaction ``xid`` whose COMMIT got no answer: committed or aborted, asked
        on another connection (while it is still ending, for up to ``patience`` seconds); None when
        the server cannot say."""
        deadline = time.monotonic() + patience
        try:
            conn, _ = self.begun("", lambda _: None)
        except Exception:
            return None
        try:
            while (status := str(last_value(conn, f"SELECT txid_status({int(xid)})"))) == "in progress":
                if time.monotonic() > deadline:
                    return None
                time.sleep(0.02)
            return status if status in ("committed", "aborted") else None
        except Exception:
            return None
        finally:
            self.give_back(conn)

    def after_fork(self) -> bool:
        """In a child process after ``os.fork()``: forget the parent's connections (without closing
        them) and start afresh; True when that happened."""
        if os.getpid() == self.pid:
            return False
        self._inherited += [*self._idle, *self._lent]
        self._idle, self._lent = [], set()
        self._lock = threading.Lock()  # it may have been held by a parent thread at the fork
        self.pid = os.getpid()
        return True

    def close(self) -> None:
        """Close every connection, idle or lent (a transaction still running on one fails); later
        ``take`` calls raise StoreError."""
        self.after_fork()
        with self._lock:
            self.closed = True
            conns = [*self._idle, *self._lent]
            self._idle, self._lent = [], set()
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()


def last_value(conn: Connection, sql: str) -> Any:
    """Run ``sql`` (statements separated by ``;``, no parameters) and return the first value of
    the last row any of them selected (None if none did)."""
    with conn.cursor() as cursor:
        cursor.execute(sql)
        rows = None
        while True:
            rows = cursor.fetchall() if cursor.description else rows
            if not cursor.nextset():
                return rows[-1][0] if rows else None
