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


def _one_line(exc: BaseException, secret: str | None) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text.replace(secret, "***") if secret else text


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
    """An autocommit connection (``application_name=remem``, a connect timeout); StoreError
    ``cannot connect to URL: …`` (without the password) when the server is down or refuses."""
    psycopg = _psycopg()
    try:
        conninfo = psycopg.conninfo.make_conninfo(
            url.conninfo, application_name="remem", connect_timeout=str(CONNECT_TIMEOUT)
        )
        secret = psycopg.conninfo.conninfo_to_dict(conninfo).get("password")
    except psycopg.Error as exc:
        raise InvalidInputError(f"not a usable PostgreSQL URL {url.shown}: {_one_line(exc, None)}") from None
    try:
        return psycopg.connect(conninfo, autocommit=True)  # type: ignore[no-any-return]
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to {url.shown}: {_one_line(exc, secret)}") from None


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
        """psycopg errors raised inside become one-line remem errors naming the store."""
        psycopg = _psycopg()
        try:
            yield
        except psycopg.errors.QueryCanceled as exc:
            raise StoreError(f"{self.url.shown} took too long: {_one_line(exc, None)}") from None
        except (psycopg.errors.CharacterNotInRepertoire, psycopg.errors.UntranslatableCharacter) as exc:
            raise InvalidInputError(f"PostgreSQL cannot store this text: {_one_line(exc, None)}") from None
        except psycopg.OperationalError as exc:
            raise StoreError(f"lost the connection to {self.url.shown}: {_one_line(exc, None)}") from None
        except psycopg.Error as exc:
            raise StoreError(f"{self.url.shown}: {_one_line(exc, None)}") from None

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
