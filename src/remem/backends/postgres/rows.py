"""The one row (or value) a statement always returns, typed, for the PostgreSQL back-end.

``cursor.fetchone()`` is ``tuple | None`` to a type checker; a ``count(*)``, an aggregate or a
``SELECT`` of expressions always returns exactly one row. These read it, and turn a missing row
(a statement that did not return one) into remem's own error instead of a ``TypeError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from remem.errors import StoreError

if TYPE_CHECKING:
    import psycopg


def one_row(cursor: psycopg.Cursor[Any]) -> tuple[Any, ...]:
    """The next row of the statement ``cursor`` last ran; StoreError when it returned none."""
    row = cursor.fetchone()
    if row is None:
        raise StoreError("the database returned no row for a query that always returns one")
    return tuple(row)


def one_value(cursor: psycopg.Cursor[Any]) -> Any:
    """The first value of the next row of the statement ``cursor`` last ran (see ``one_row``)."""
    return one_row(cursor)[0]
