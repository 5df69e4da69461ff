"""The local back-end's transaction helpers: every write to the database goes through ``atomic``."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from remem.errors import UsageError


@contextlib.contextmanager
def atomic(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``; on any exception a ``ROLLBACK`` (only if a transaction is
    open, so the original error is never hidden by a failing rollback), then the exception re-raised.

    The connection must be in autocommit mode (``isolation_level=None``); transactions do not nest:
    inside a read snapshot this thread still holds open (an unfinished export) it raises UsageError.
    """
    if conn.in_transaction:
        raise UsageError(
            "a write cannot run while an export of this store is still being read on this thread; "
            "finish or close the export first"
        )
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):  # also when the connection was closed meanwhile
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        raise


@contextlib.contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """A read transaction: every read inside sees one state of the database (a WAL snapshot);
    inside a transaction already open (a write, an outer snapshot) it joins that one."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:  # ending a read: nothing to lose if the connection was closed meanwhile (a reader gone)
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("COMMIT")
