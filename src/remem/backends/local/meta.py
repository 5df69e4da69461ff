"""The store's key/value table (``store_meta``: the generation, the store id, counts and records of
what derived state was made from), read and written on a connection (``Records`` wraps them)."""

from __future__ import annotations

import sqlite3


def get(conn: sqlite3.Connection, key: str) -> str | None:
    """The value of ``key``, or None when the table has none."""
    row = conn.execute("SELECT value FROM store_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def put(conn: sqlite3.Connection, key: str, value: str) -> None:
    """Set ``key`` to ``value`` (in the caller's transaction)."""
    conn.execute(
        "INSERT INTO store_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )
