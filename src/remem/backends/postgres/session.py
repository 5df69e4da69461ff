"""Connections to the server and remem's transactions over them (``connecting`` opens them and
turns psycopg's errors into remem's).

Every statement runs inside ``transaction`` (or ``snapshot``), which sets the statement timeout for
that transaction only (``SET LOCAL``: it works behind transaction-pooling proxies) and turns a
lost server, a timeout or a refused statement into a one-line StoreError naming the store without
its password.

A session may be shared by threads: a transaction takes a connection of its own from the
session's ``Pool`` and gives it back after COMMIT or ROLLBACK; a transaction opened inside another
in the same thread joins it. A transaction that does not say it ``writes`` is READ ONLY.

Connections die (a restarted server, a terminated backend). One found dead as a transaction begins
is replaced by a new one, so the next call just works. One lost inside a transaction is a
ConnectionLostError: nothing of the transaction was stored (the server never saw its COMMIT). One
lost while a write commits is settled by asking the server, on a new connection, what became of
the transaction's id (``txid_status``): committed is success; aborted is "not stored"; no answer
is "unknown". A read losing its COMMIT has lost nothing: its rows were read. (The retired
bench/soak.py, in git history: 4 threads sharing a Memories and 2 processes adding and searching for
10 minutes while every connection was terminated every 30 s: 13,221 adds acknowledged and 13,221
stored, 1 reported lost in flight and not stored, no other error.)
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import weakref
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from remem.backends.postgres.connecting import connect, one_line, psycopg_module, remem_error
from remem.backends.postgres.pool import Pool, last_value
from remem.backends.postgres.unchanged import STAMP, SnapshotCache
from remem.errors import ConnectionLostError, RememError, StoreError

if TYPE_CHECKING:
    import psycopg

    from remem.backends.postgres.urls import StoreUrl

#: Milliseconds one statement may run (0: no limit, for reindex and re-embedding).
STATEMENT_TIMEOUT_MS = 60_000
T = TypeVar("T")
P = ParamSpec("P")


#: How long the fate of a write whose COMMIT got no answer is asked while it is still ending (s).
SETTLE_SECONDS = 5.0

if TYPE_CHECKING:
    Connection = psycopg.Connection[tuple[Any, ...]]


def read_again(method: Callable[Concatenate[Any, P], T]) -> Callable[Concatenate[Any, P], T]:
    """Makes a method of an object with a ``session`` (a PostgresBackend) a read done once more,
    on a new connection, when its connection is lost midway (a read changes nothing: twice is
    safe), unless it runs inside a transaction this thread had open."""

    @functools.wraps(method)
    def read(owner: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        session: Session = owner.session
        return session._read_again(lambda: method(owner, *args, **kwargs))

    return read


@dataclass(eq=False)
class _Lease:
    """A connection lent to one thread's transaction."""

    conn: Connection
    thread: threading.Thread
    pid: int
    writes: bool
    read_only: bool
    xid: int | None = None
    #: Values computed once per transaction (a search's keyword weights), then dropped.
    memo: dict[Any, Any] = field(default_factory=dict)


class Session:
    """The store's address and its connections, with remem's transactions over them (see the
    module docstring: safe to share between threads; survives lost connections and ``os.fork``)."""

    def __init__(self, conn: Connection, url: StoreUrl) -> None:
        """Serve the store at ``url``, starting with the open autocommit connection ``conn``."""
        self.url = url
        self._pg = psycopg_module()  # kept: at interpreter exit it can no longer be imported
        self._pool = Pool(conn, lambda: connect(url), url.shown)
        self._pid = os.getpid()
        self._held: dict[int, _Lease] = {}
        self._vectors = False
        self._unchanged = SnapshotCache()
        self._lasting = SnapshotCache()
        self._registered: weakref.WeakSet[Connection] = weakref.WeakSet()

    def _current(self) -> _Lease | None:
        """The transaction this thread is in, if any (after a fork, none is: they are the parent's)."""
        if self._pid != os.getpid():
            self._pid, self._held = os.getpid(), {}
        lease = self._held.get(threading.get_ident())
        return lease if lease is not None and lease.thread is threading.current_thread() else None

    def in_transaction(self) -> bool:
        """True inside a transaction (or snapshot) this thread has open."""
        return self._current() is not None

    def unchanged(self, cursor: psycopg.Cursor[Any], key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` (run on ``cursor``); inside a ``snapshot``, the value it gave in an earlier
        snapshot that saw the same state of the database, if there was one (``unchanged``)."""
        lease = self._current()
        if lease is None or "stamp" not in lease.memo:  # not in a snapshot (which selects its stamp)
            return compute()
        return self._unchanged.get(lease.memo["stamp"], key, compute)

    def lasting(self, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, or the value it gave before in this session: for values that read no row of
        the store (the stemmer's lexemes of a query's terms)."""
        return self._lasting.get(None, key, compute)

    @property
    def memo(self) -> dict[Any, Any]:
        """Values computed once per transaction: the current transaction's (outside any, a new one)."""
        lease = self._current()
        return lease.memo if lease is not None else {}

    @property
    def conn(self) -> Connection:
        """The connection of the transaction this thread is in (only inside ``transaction``)."""
        lease = self._current()
        if lease is None:
            raise StoreError(f"{self.url.shown}: no transaction is open in this thread")
        return lease.conn

    def register_vectors(self) -> None:
        """Let numpy arrays travel as pgvector ``vector`` values, on every connection from now on
        (loads numpy, so only when vectors are read or written: ``list`` and ``export`` never need it)."""
        self._vectors = True
        lease = self._current()
        if lease is not None:
            with self.errors():
                self._register(lease.conn)

    def _register(self, conn: Connection) -> None:
        if self._vectors and conn not in self._registered:
            from pgvector.psycopg import register_vector  # noqa: PLC0415 - part of the extra

            register_vector(conn)
            self._registered.add(conn)

    def _read_again(self, read: Callable[[], T]) -> T:
        """``read()``, once more (on a new connection) when its connection was lost midway, unless
        it ran inside a transaction this thread had open (that one is lost too: its caller decides)."""
        if self._current() is not None:
            return read()
        try:
            return read()
        except ConnectionLostError:
            return read()

    @contextlib.contextmanager
    def errors(self, conn: Connection | None = None) -> Iterator[None]:
        """psycopg errors raised inside become one-line remem errors naming the store
        (``remem_error``); a lost connection (``conn``, else this thread's transaction's) is a
        ConnectionLostError."""
        try:
            yield
        except Exception as exc:
            if not isinstance(exc, self._pg.Error):
                raise
            raise self._translated(exc, conn) from None

    def _translated(self, exc: Exception, conn: Connection | None = None) -> RememError:
        lease = self._current()
        conn = conn or (lease.conn if lease is not None else None)
        error = remem_error(exc, conn, self.url.shown)
        if conn is not None and conn.closed and not self._pool.closed:  # closed under us, not by close()
            error = ConnectionLostError(f"lost the connection to {self.url.shown}: {one_line(exc)}")
        if isinstance(error, ConnectionLostError) and lease is not None and lease.writes:
            return ConnectionLostError(f"{error}; the change was not stored")
        return error

    @contextlib.contextmanager
    def transaction(
        self, timeout_ms: int = STATEMENT_TIMEOUT_MS, *, writes: bool = False
    ) -> Iterator[psycopg.Cursor[Any]]:
        """A transaction on a connection of this thread's own: all of it commits, or none; READ
        ONLY unless it ``writes``. Inside one already open in this thread, that one."""
        held = self._current()
        if held is not None:
            if writes and held.read_only:
                raise StoreError(
                    f"cannot change the store at {self.url.shown} while this thread reads it in one "
                    "snapshot (an unfinished export()): finish or close the export first"
                )
            with self.errors():
                if writes and not held.writes:  # from now on, settle a COMMIT that gets no answer
                    held.writes, held.xid = True, int(last_value(held.conn, "SELECT txid_current()"))
                with held.conn.cursor() as cursor:
                    yield cursor
            return
        begin = f"BEGIN READ {'WRITE' if writes else 'ONLY'}; SET LOCAL statement_timeout = {int(timeout_ms)}"
        begin += "; SELECT txid_current()" if writes else ""  # to settle a COMMIT that gets no answer
        with self._leased(begin, writes, False) as lease, lease.conn.cursor() as cursor:
            yield cursor

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read-only REPEATABLE READ transaction: every read inside sees one state of the store."""
        if self._current() is not None:
            yield
            return
        begin = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY; SET LOCAL statement_timeout = "
        stamped = f"{STATEMENT_TIMEOUT_MS}; {STAMP}"  # the state it sees, in the same round trip
        with self._leased(begin + stamped, False, True):
            yield

    @contextlib.contextmanager
    def connection(self) -> Iterator[Connection]:
        """A connection of its own outside any transaction, for statements that cannot run in one
        (CREATE INDEX CONCURRENTLY); a kept one found dead is replaced by a new one, once."""
        with self.errors():
            conn, _ = self._pool.begun("", self._register)
        try:
            with self.errors(conn):
                yield conn
        finally:
            self._pool.give_back(conn)

    @contextlib.contextmanager
    def _leased(self, begin: str, writes: bool, read_only: bool) -> Iterator[_Lease]:
        """A connection with ``begin`` run on it, this thread's until the transaction commits (or
        rolls back, on an exception)."""
        with self.errors():
            conn, selected = self._pool.begun(begin, self._register)
        lease = _Lease(
            conn, threading.current_thread(), os.getpid(), writes, read_only, selected if writes else None
        )
        if read_only and selected is not None:  # a snapshot's stamp (``unchanged``)
            lease.memo["stamp"] = str(selected)
        self._held[threading.get_ident()] = lease  # ended by whichever thread ends it (a generator)
        try:
            with self.errors():
                try:
                    yield lease
                except BaseException:
                    self._roll_back(lease)
                    raise
            self._commit(lease)
        finally:
            if self._held.get(lease.thread.ident or 0) is lease:
                del self._held[lease.thread.ident or 0]
            lease.memo.clear()
            self._pool.give_back(conn)

    def _roll_back(self, lease: _Lease) -> None:
        """End a failed transaction; a connection that cannot is closed (the server rolls back)."""
        if lease.pid != os.getpid():
            return  # the parent's connection: never touched
        try:
            lease.conn.execute("ROLLBACK")
        except Exception:
            with contextlib.suppress(Exception):
                lease.conn.close()

    def _commit(self, lease: _Lease) -> None:
        """COMMIT; a write whose COMMIT got no answer is settled (see the module docstring)."""
        if lease.pid != os.getpid():
            if lease.writes:
                raise StoreError(f"a change to {self.url.shown} begun before os.fork() cannot end after it")
            return
        try:
            lease.conn.execute("COMMIT")
        except Exception as exc:
            if not isinstance(exc, self._pg.Error):
                raise
            error = self._translated(exc)
            if not isinstance(error, ConnectionLostError):
                raise error from None
            if not lease.writes:
                return  # a read lost nothing: its rows were read
            fate = self._pool.fate(lease.xid, SETTLE_SECONDS) if lease.xid is not None else None
            if fate == "committed":
                return
            stored = False if fate == "aborted" else None
            lost = f"lost the connection to {self.url.shown} while committing: {one_line(exc)}; "
            what = (
                "the change was not stored" if stored is False else "whether the change was stored is unknown"
            )
            raise ConnectionLostError(lost + what, stored) from None

    def close(self) -> None:
        """Close every connection (a transaction left open is rolled back by the server); later
        calls raise StoreError."""
        self._pool.close()
