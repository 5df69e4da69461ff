"""Values that hold while a store shows the same state, kept from one search to the next.

Part of what a search needs depends on the store's contents, not on the query: how many memories
there are, how many hold a word, how many vectors a filter selects. A back-end reads a *stamp* of
the state it sees (PostgreSQL: its snapshot; SQLite: the keyword index's own records), and a value
computed in one state is reused while the stamp is the same; any write changes the stamp, and the
next search computes again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")
#: The most values kept for one state (one per filter asked about, say); past it they start over.
MOST_VALUES = 256


class SnapshotCache:
    """Values keyed by what they count, valid for one state of the store (its stamp); thread-safe."""

    def __init__(self, most: int = MOST_VALUES) -> None:
        """An empty cache that keeps at most ``most`` values, then starts over."""
        self._lock = threading.Lock()
        self._most = most
        self._stamp: Hashable = None
        self._values: dict[Hashable, Any] = {}

    def get(self, stamp: Hashable, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()``, or the value it gave in a state with the same ``stamp``."""
        with self._lock:
            if self._stamp == stamp and key in self._values:
                return self._values[key]  # type: ignore[no-any-return]
        value = compute()
        self.put(stamp, key, value)
        return value

    def peek(self, stamp: Hashable, key: Hashable) -> Any:
        """The value kept for ``key`` in a state with the same ``stamp``, or None."""
        with self._lock:
            return self._values.get(key) if self._stamp == stamp else None

    def put(self, stamp: Hashable, key: Hashable, value: Any) -> None:
        """Keep ``value`` for ``key`` while the state's stamp is ``stamp``."""
        with self._lock:
            if self._stamp != stamp or len(self._values) >= self._most:
                self._stamp, self._values = stamp, {}
            self._values[key] = value
