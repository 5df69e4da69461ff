"""A long-lived process's upkeep of its store, in one thread of its own at a time: the vector index
checkpoint rewritten and the keyword lane's stored heads taken again, so that no caller waits."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from remem.errors import StoreClosedError


class Background:
    """At most one upkeep thread at a time (thread-safe)."""

    def __init__(self) -> None:
        """No thread at work."""
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self, work: Callable[[], None], name: str) -> None:
        """Run ``work`` in a daemon thread named ``name`` unless one is at work; a store closed
        meanwhile ends it (a process that ends leaves it undone: a temporary file, removed later)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=_until_closed, args=(work,), name=name)
                self._thread.daemon = True
                self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread at work, if any (at most ``timeout`` seconds)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)


def _until_closed(work: Callable[[], None]) -> None:
    """``work()`` in a thread of its own: a store closed meanwhile ends it."""
    with contextlib.suppress(StoreClosedError):
        work()
