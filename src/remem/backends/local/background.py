"""A long-lived process's upkeep of its store, in one thread of its own at a time: the vector index
checkpoint rewritten and the keyword lane's stored heads taken again, so that no caller waits."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from remem.errors import StoreClosedError

T = TypeVar("T")


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


class Paced:
    """A task run so seldom that it takes at most ``share`` of the time: not again until its last
    run's length divided by ``share`` has passed since that run began (a long-lived process taking
    the keyword heads of a million memories again, 12 s, while a bulk ingest keeps them behind)."""

    def __init__(self, share: float) -> None:
        """Due at once."""
        self._share = share
        self._began = -math.inf
        self._took = 0.0

    def due(self) -> bool:
        """Whether the task may run now."""
        return time.monotonic() - self._began >= self._took / self._share

    def run(self, work: Callable[[], T]) -> T:
        """``work()``, timed for ``due``."""
        began = time.monotonic()
        try:
            return work()
        finally:
            self._began, self._took = began, time.monotonic() - began


def _until_closed(work: Callable[[], None]) -> None:
    """``work()`` in a thread of its own: a store closed meanwhile ends it."""
    with contextlib.suppress(StoreClosedError):
        work()
