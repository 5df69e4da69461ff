"""What one write did to the vectors, as the index checkpoint's readers need it: the vector ids it
deleted, logged in the write's own transaction (``Records.log_deleted``). Added vectors need no
note: a reader takes every row with an id above its checkpoint's (``sync.catch_up``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class WriteLog:
    """Collects the vector ids one write deletes (it is handed to the writer as its index)."""

    def __init__(self) -> None:
        """An empty log."""
        self.removed: list[int] = []

    def add(self, ids: Sequence[int], vectors: Any) -> None:
        """Vectors stored under ``ids``: nothing to note (their rows say so)."""

    def remove(self, ids: Sequence[int]) -> None:
        """Vectors deleted: noted, for the write to log."""
        self.removed.extend(int(i) for i in ids)
