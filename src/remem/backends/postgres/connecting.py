"""Opening a connection to the server, and psycopg's errors as remem's.

psycopg is imported here, when a PostgreSQL store is opened, and nowhere on a local store's path.
libpq is given the URL's parts as keywords, never the URL, so no message can quote the password.
Only a connection that is gone says "lost the connection"; a limit of PostgreSQL is the caller's
InvalidInputError; a statement cancelled by its timeout "took too long".
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from remem.errors import ConnectionLostError, InvalidInputError, RememError, StoreError

if TYPE_CHECKING:
    import psycopg

    from remem.backends.postgres.urls import StoreUrl

#: Seconds libpq waits for a server before giving up.
CONNECT_TIMEOUT = 10
INSTALL_HINT = (
    "PostgreSQL stores need the client libraries, the postgres extra: pip install 'remem[postgres]' "
    "(from a checkout: pip install '.[postgres]')"
)


def one_line(exc: BaseException) -> str:
    """The error's text on one line (the password never reaches it: libpq gets it as a keyword of
    its own, which no message quotes)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def psycopg_module() -> Any:
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
    psycopg = psycopg_module()
    try:
        given = psycopg.conninfo.conninfo_to_dict(url.conninfo)
        timeout = {} if "connect_timeout" in given else {"connect_timeout": str(CONNECT_TIMEOUT)}
        conninfo = psycopg.conninfo.make_conninfo(url.conninfo, application_name="remem", **timeout)
    except psycopg.Error as exc:
        raise InvalidInputError(f"not a usable PostgreSQL URL {url.shown}: {one_line(exc)}") from None
    try:
        return psycopg.connect(conninfo, autocommit=True)  # type: ignore[no-any-return]
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to {url.shown}: {one_line(exc)}") from None


#: SQLSTATEs of a connection the server ended: shut down (by an administrator, a crash, or
#: ``pg_terminate_backend``), not accepting connections yet, idle too long (in a transaction or not).
_ENDED_BY_SERVER = frozenset({"57P01", "57P02", "57P03", "57P05", "25P03"})


def lost_connection(exc: Exception, conn: psycopg.Connection[Any] | None) -> bool:
    """True when ``exc`` means the connection is gone — the server ended it (class 08, a shutdown,
    an idle timeout) or it broke under the client — not that the server refused a statement
    (with no connection at hand: when it is psycopg's OperationalError)."""
    sqlstate = getattr(exc, "sqlstate", None) or ""
    if sqlstate.startswith("08") or sqlstate in _ENDED_BY_SERVER:
        return True
    return conn.broken if conn is not None else isinstance(exc, psycopg_module().OperationalError)


def remem_error(exc: Exception, conn: psycopg.Connection[Any] | None, shown: str) -> RememError:
    """A psycopg error as remem's, naming the store ``shown``: "lost the connection" only when it
    is (``lost_connection``); text or a value PostgreSQL cannot take (a program limit) is the
    caller's InvalidInputError; a statement cancelled by its timeout "took too long"."""
    errors, text = psycopg_module().errors, one_line(exc)
    sqlstate = getattr(exc, "sqlstate", None) or ""
    if isinstance(exc, errors.QueryCanceled):
        return StoreError(f"{shown} took too long: {text}")
    if isinstance(exc, (errors.CharacterNotInRepertoire, errors.UntranslatableCharacter)):
        return InvalidInputError(f"PostgreSQL cannot store this text: {text}")
    if sqlstate.startswith("54"):
        return InvalidInputError(f"{shown} cannot take this (a limit of PostgreSQL): {text}")
    if lost_connection(exc, conn):
        return ConnectionLostError(f"lost the connection to {shown}: {text}")
    if conn is not None and conn.closed:
        return StoreError(f"the store at {shown} was closed: {text}")
    return StoreError(f"{shown}: {text}")
