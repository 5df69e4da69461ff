"""A list page as both back-ends read it: the memories a filter selects past a position, newest first
(created_at, then id, descending), cut into branches that an index on (created_at, id) or on
(user, created_at, id) serves each in the list's order, so that a page reads about its own rows at
any depth and for any position.

One condition would not do: an OR of the user's and the shared memories makes either database read
every selected row and sort them; a row comparison ``(created_at, id) < (t, i)`` lets SQLite bound
the scan by created_at alone (every memory of a bulk batch shares one) and PostgreSQL estimate it as
a few rows (and then read all of a user's past the position, and sort them). So a page is the union
of up to four branches: the user's and the shared memories apart, and the memories as old as the
position (with a lower id) apart from the older ones; each back-end renders a branch in its SQL,
takes ``limit`` rows of each, and the first ``limit`` of their union in the list's order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from remem.types import Filters


class Place(Enum):
    """Which memories of a branch, relative to the position."""

    ANY = "any"  # no position: the first page
    TIES = "ties"  # as old as the position, with a lower id
    OLDER = "older"  # created before the position


#: A place's conditions on ``m`` ({mark}: the back-end's parameter mark), in the order of its values.
_CONDITIONS = {
    Place.ANY: (),
    Place.TIES: ("m.created_at = {mark}", "m.id < {mark}"),
    Place.OLDER: ("m.created_at < {mark}",),
}


@dataclass(frozen=True)
class Dialect:
    """How a back-end writes a branch: its parameter mark, its condition for "no user", and its
    translation of filters into a condition on ``m`` and parameters."""

    mark: str
    no_user: str
    where: Callable[[Filters], tuple[str, list[Any]]]


@dataclass(frozen=True)
class Branch:
    """One branch of a page: ``filters`` (never ``shared``), the memories without a user only when
    ``no_user``, ``place`` relative to the position and the values of its conditions (``at``)."""

    filters: Filters
    no_user: bool
    place: Place
    at: tuple[Any, ...]


def branches(filters: Filters, after: tuple[str, int] | None) -> list[Branch]:
    """The branches whose union is what ``filters`` select past ``after`` ((created_at, id); None:
    from the newest)."""
    parts = [(filters, False)]
    if filters.user is not None and filters.shared:
        parts = [(replace(filters, shared=False), False), (replace(filters, user=None, shared=False), True)]
    places = [(Place.ANY, ())] if after is None else [(Place.TIES, after), (Place.OLDER, after[:1])]
    return [Branch(chosen, no_user, place, at) for chosen, no_user in parts for place, at in places]


def page_query(
    source: str,
    filters: Filters,
    after: tuple[str, int] | None,
    limit: int,
    dialect: Dialect,
) -> tuple[str, list[Any]]:
    """One statement (and its parameters) reading a page: ``source`` is the back-end's ``SELECT
    <columns> FROM <memories> m``; each branch takes ``limit`` rows in the list's order, the union
    its first ``limit``."""
    queries = [branch_query(source, part, limit, dialect) for part in branches(filters, after)]
    params = [value for _, values in queries for value in values]
    if len(queries) == 1:
        return queries[0][0], params
    union = " UNION ALL ".join(f"SELECT * FROM ({select}) AS b{n}" for n, (select, _) in enumerate(queries))
    return f"{union} ORDER BY created_at DESC, id DESC LIMIT {dialect.mark}", [*params, limit]


def branch_query(source: str, part: Branch, limit: int, dialect: Dialect) -> tuple[str, list[Any]]:
    """One branch's statement: its first ``limit`` rows in the list's order (``page_query``)."""
    condition, values = _condition(part, dialect)
    return f"{source} WHERE {condition} {ORDER} LIMIT {dialect.mark}", [*values, limit]


#: The list's order, on the memories' alias ``m``.
ORDER = "ORDER BY m.created_at DESC, m.id DESC"


def _condition(part: Branch, dialect: Dialect) -> tuple[str, list[Any]]:
    """A branch's condition on ``m`` and its parameters."""
    place = [condition.format(mark=dialect.mark) for condition in _CONDITIONS[part.place]]
    condition, params = dialect.where(part.filters)
    clauses = [*([dialect.no_user] if part.no_user else []), *place, condition]
    return " AND ".join(clauses), [*part.at, *params]
