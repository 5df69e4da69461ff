"""What every back-end says when a caller uses a ``Memories`` after closing it: that it is closed,
in one line (StoreClosedError) — never that the database is damaged or the connection lost."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from remem import Memories, NewMemory
from remem.core.opening import model_catalog
from remem.errors import StoreClosedError, StoreCorruptError
from remem.testing import FakeEmbedder

if TYPE_CHECKING:
    from remem.backends.base import Backend

CALLS: dict[str, Callable[[Memories], Any]] = {
    "add": lambda m: m.add("added after close"),
    "add_many": lambda m: m.add_many([NewMemory("one"), "two"]),
    "search": lambda m: m.search("the first memory"),
    "keyword search": lambda m: m.search("first", mode="keyword"),
    "list": lambda m: m.list(),
    "get": lambda m: m.get(1),
    "get_many": lambda m: m.get_many([1]),
    "iter": lambda m: list(m.iter()),
    "export": lambda m: list(m.export()),
    "context": lambda m: m.context("first"),
    "edit": lambda m: m.edit(1, "edited after close"),
    "forget": lambda m: m.forget([1]),
    "stats": lambda m: m.stats(),
    "doctor": lambda m: m.doctor(),
    "pending_count": lambda m: m.pending_count(),
    "embed_pending": lambda m: m.embed_pending(),
    "warm_up": lambda m: m.warm_up(),
    "model": lambda m: m.model,
    "tokens.add": lambda m: m.tokens.add(user="alice"),
    "tokens.list": lambda m: m.tokens.list(),
    "tokens.revoke": lambda m: m.tokens.revoke("alice"),
    "tokens.verify": lambda m: m.tokens.verify("remem_x"),
}


@pytest.fixture
def closed(backend: Backend) -> Memories:
    """A Memories that held one memory, then was closed."""
    memories = Memories(backend, model_catalog(environ={}), FakeEmbedder())
    memories.add("the first memory")
    memories.close()
    return memories


@pytest.mark.parametrize("call", list(CALLS))
def test_a_closed_memories_says_it_is_closed(closed: Memories, call: str) -> None:
    with pytest.raises(StoreClosedError, match=r"^this Memories is closed \(the store at ") as caught:
        CALLS[call](closed)
    assert not isinstance(caught.value, StoreCorruptError)
    assert "connection" not in str(caught.value)


def test_closing_twice_is_harmless_and_what_it_knew_stays_readable(closed: Memories) -> None:
    closed.close()
    assert closed.location and closed.warnings == []
