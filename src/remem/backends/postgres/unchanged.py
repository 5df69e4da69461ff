"""Values that hold while the database shows the same state, kept from one snapshot to the next.

Part of what a search needs depends on the store's contents, not on the query: the number of
memories and their mean term count (BM25), how many vectors a filter selects (exact scoring or the
graph). Counting them costs milliseconds a search (10,000 memories: 2 ms for the count and mean).
Two snapshots whose ``txid_current_snapshot()`` is the same (xmin, xmax and the transactions then
running) see the same committed rows: no transaction ended between them. So a value counted inside
one read-only snapshot is reused by the next snapshot with the same stamp; any transaction ending
anywhere on the server (a write, a rollback) changes the stamp, and the next search counts again.
Only ``Session.snapshot`` transactions (REPEATABLE READ, READ ONLY: one state for every statement,
no changes of their own) read or fill the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")
#: The most values kept for one state (one per filter asked about, say); past it they start over.
MOST_VALUES = 256


class SnapshotCache:
    """Values keyed by what they count, valid for one state of the database (its stamp)."""

    def __init__(self) -> None:
        """An empty cache."""
        self._lock = threading.Lock()
        self._stamp: str | None = None
        self._values: dict[Hashable, Any] = {}

    def get(self, stamp: str, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, or the value it gave in a snapshot with the same ``stamp``."""
        with self._lock:
            if self._stamp == stamp and key in self._values:
                return self._values[key]  # type: ignore[no-any-return]
        value = compute()
        with self._lock:
            if self._stamp != stamp or len(self._values) >= MOST_VALUES:
                self._stamp, self._values = stamp, {}
            self._values[key] = value
        return value


def stamp(cursor: psycopg.Cursor[Any]) -> str:
    """The state of the database the current snapshot sees (see the module docstring)."""
    cursor.execute("SELECT txid_current_snapshot()::text")
    return str(cursor.fetchone()[0])  # type: ignore[index]
