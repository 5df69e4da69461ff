"""One connection to the server, its transactions, and psycopg's errors as remem's.

psycopg is imported here, when a PostgreSQL store is opened, and nowhere on a local store's path.
Every statement runs inside ``transaction`` (or ``snapshot``), which sets the statement timeout for
that transaction only (``SET LOCAL``: it works behind transaction-pooling proxies) and turns a
lost server, a timeout or a refused statement into a one-line StoreError naming the store without
its password.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from remem.errors import InvalidInputError, StoreError

if TYPE_CHECKING:
    import psycopg

    from remem.backends.postgres.urls import StoreUrl

#: Seconds libpq waits for a server before giving up.
CONNECT_TIMEOUT = 10
#: Milliseconds one statement may run (0: no limit, for reindex and re-embedding).
STATEMENT_TIMEOUT_MS = 60_000
INSTALL_HINT = "PostgreSQL stores need the client libraries: pip install 'remem[postgres]'"


def _one_line(exc: BaseException) -> str:
    """The error's text on one line (the password never reaches it: libpq gets it as a keyword of
    its own, which no message quotes)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _psycopg() -> Any:
    """psycopg, its log records kept off stderr unless the application handles logging: on a lost
    connection it logs "error ignored terminating <psycopg.Pipeline [BAD]>…" besides raising the
    error remem reports (Python would print it through its last-resort handler)."""
    try:
        import psycopg  # noqa: PLC0415 - the optional extra, loaded only for PostgreSQL stores
    except ImportError:
        raise StoreError(INSTALL_HINT) from None
    logger = logging.getLogger("psycopg")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return psycopg


def connect(url: StoreUrl) -> psycopg.Connection[tuple[Any, ...]]:
    """An autocommit connection (``application_name=remem``; the URL's ``connect_timeout``, else
    ``CONNECT_TIMEOUT``); StoreError ``cannot connect to URL: …`` (without the password) when the
    server is down or refuses, InvalidInputError when libpq refuses a parameter of the URL."""
    psycopg = _psycopg()
    try:
        given = psycopg.conninfo.conninfo_to_dict(url.conninfo)
        timeout = {} if "connect_timeout" in given else {"connect_timeout": str(CONNECT_TIMEOUT)}
        conninfo = psycopg.conninfo.make_conninfo(url.conninfo, application_name="remem", **timeout)
    except psycopg.Error as exc:
        raise InvalidInputError(f"not a usable PostgreSQL URL {url.shown}: {_one_line(exc)}") from None
    try:
        return psycopg.connect(conninfo, autocommit=True)  # type: ignore[no-any-return]
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to {url.shown}: {_one_line(exc)}") from None


#: SQLSTATEs of a connection the server ended: shut down (by an administrator, a crash, or
#: ``pg_terminate_backend``), not accepting connections yet, idle too long (in a transaction or not).
_ENDED_BY_SERVER = frozenset({"57P01", "57P02", "57P03", "57P05", "25P03"})


def lost_connection(exc: Exception, conn: psycopg.Connection[Any]) -> bool:
    """True when ``exc`` means the connection is gone — the server ended it (class 08, a shutdown,
    an idle timeout) or it broke under the client — not that the server refused a statement."""
    sqlstate = getattr(exc, "sqlstate", None) or ""
    return conn.broken or sqlstate.startswith("08") or sqlstate in _ENDED_BY_SERVER


def remem_error(exc: Exception, conn: psycopg.Connection[Any], shown: str) -> StoreError | InvalidInputError:
    """A psycopg error as remem's, naming the store ``shown``: "lost the connection" only when it
    is (``lost_connection``); text or a value PostgreSQL cannot take (a program limit) is the
    caller's InvalidInputError; a statement cancelled by its timeout "took too long"."""
    errors, text = _psycopg().errors, _one_line(exc)
    sqlstate = getattr(exc, "sqlstate", None) or ""
    if isinstance(exc, errors.QueryCanceled):
        return StoreError(f"{shown} took too long: {text}")
    if isinstance(exc, (errors.CharacterNotInRepertoire, errors.UntranslatableCharacter)):
        return InvalidInputError(f"PostgreSQL cannot store this text: {text}")
    if sqlstate.startswith("54"):
        return InvalidInputError(f"{shown} cannot take this (a limit of PostgreSQL): {text}")
    if lost_connection(exc, conn):
        return StoreError(f"lost the connection to {shown}: {text}")
    if conn.closed:
        return StoreError(f"the store at {shown} was closed: {text}")
    return StoreError(f"{shown}: {text}")


class Session:
    """A connection and the store's address, with remem's transactions over it."""

    def __init__(self, conn: psycopg.Connection[tuple[Any, ...]], url: StoreUrl) -> None:
        """Wrap an open autocommit connection to the store at ``url``."""
        self.conn = conn
        self.url = url
        self._vectors_registered = False
        #: Values computed once per top-level transaction (a search's keyword weights), then dropped.
        self.memo: dict[Any, Any] = {}

    def register_vectors(self) -> None:
        """Let numpy arrays travel as pgvector ``vector`` values (once; loads numpy, so only when
        vectors are read or written: ``list`` and ``export`` never need it)."""
        if not self._vectors_registered:
            from pgvector.psycopg import register_vector  # noqa: PLC0415 - part of the extra

            with self.errors():
                register_vector(self.conn)
            self._vectors_registered = True

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """psycopg errors raised inside become one-line remem errors naming the store (``remem_error``)."""
        try:
            yield
        except _psycopg().Error as exc:
            raise remem_error(exc, self.conn, self.url.shown) from None

    @contextlib.contextmanager
    def transaction(self, timeout_ms: int = STATEMENT_TIMEOUT_MS) -> Iterator[psycopg.Cursor[Any]]:
        """A transaction (all of it commits, or none); inside one already open, that one."""
        with self.errors():
            if self.conn.info.transaction_status != 0:  # not idle: join the open transaction
                yield self.conn.cursor()
                return
            self.memo.clear()
            try:
                with self.conn.transaction(), self.conn.cursor() as cursor:
                    cursor.execute("SELECT set_config('statement_timeout', %s, true)", (str(timeout_ms),))
                    yield cursor
            finally:
                self.memo.clear()

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read-only REPEATABLE READ transaction: every read inside sees one state of the store."""
        with self.errors():
            if self.conn.info.transaction_status != 0:
                yield
                return
            self.memo.clear()
            try:
                with self.conn.transaction(), self.conn.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    cursor.execute(
                        "SELECT set_config('statement_timeout', %s, true)", (str(STATEMENT_TIMEOUT_MS),)
                    )
                    yield
            except _psycopg().Error:
                if not self.conn.closed:  # a reader that went away closed it: nothing to end
                    raise
            finally:
                self.memo.clear()

    def close(self) -> None:
        """Close the connection (a transaction left open is rolled back by the server)."""
        with contextlib.suppress(Exception):
            self.conn.close()
