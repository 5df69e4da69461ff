"""Every public method of ``Memories`` given a wrong type or a bad value where the back-end takes
part, on every back-end: a wrong type is a TypeError naming the argument, a bad value of the right
type an InvalidInputError naming it — the same on both back-ends — and the store is left as it was
(nothing added, embedded, forgotten or re-indexed, no model loaded). ``Filters`` and ``NewMemory``
select and store as their keywords do however they are made. The argument is named as the library
names it (``min_score``, never the command line's ``--min-score``), and an InvalidInputError carries
it as its ``parameter``. The arguments refused before any back-end is reached are checked once, on a
local store: tests/unit/test_argument_checks.py."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import remem
from remem import Filters, Memories, NewMemory
from remem.errors import InvalidInputError, MemoryNotFoundError
from remem.testing import FakeEmbedder
from remem.types import memory_record

if TYPE_CHECKING:
    from remem.backends.base import Backend

Call = Callable[[Memories], Any]
#: (id, call, the exception class it must raise, the argument its message must name): the bad
#: arguments a back-end takes part in refusing. The items of add_many's memories and add_entries'
#: entries are checked as the ingest reads them, after the back-end was asked for its model and
#: index state: the ingest refuses them before it writes. A get of an id past bigint asks the
#: back-end for none and comes back as MemoryNotFoundError. (tests/unit/test_argument_checks.py
#: holds the table of those refused before any back-end is reached, run once.)
BAD: list[tuple[str, Call, type[Exception], str]] = [
    ("add-many-dicts", lambda m: m.add_many([{"text": "new"}]), TypeError, "memories"),
    ("add-many-a-none", lambda m: m.add_many(["new", None]), TypeError, "memories"),
    ("add-many-blank", lambda m: m.add_many(["new", " "]), InvalidInputError, "text"),
    ("add-entries-memories", lambda m: m.add_entries([NewMemory("new")]), TypeError, "entries"),
    ("get-past-bigint", lambda m: m.get(2**64), InvalidInputError, "memory"),
]  # fmt: skip


def _state(memories: Memories) -> tuple[Any, ...]:
    """Everything a call could have changed: every memory, what waits for vectors, the model."""
    return [memory_record(m) for m in memories.iter()], memories.pending_count(), memories.model


def _names(message: str, argument: str) -> bool:
    """The message names ``argument`` in the library's words, and no command-line option."""
    return argument in message and not re.search(r"(?<![\w-])--[a-z]", message)


@pytest.fixture
def memories(backend: Backend, tmp_path: Path) -> Memories:
    """A store of each back-end holding a memory tagged o, p, s (alice's), one tagged ops and one
    waiting for its vectors; served by a fake embedder that counts its calls."""
    served = Memories(backend, remem.model_catalog(models_dir=tmp_path / "models"), FakeEmbedder())
    served.add("a memo tagged o p s", user="alice", tags=["o", "p", "s"])
    served.add("a memo tagged ops", tags=["ops"])
    served.add("a memo waiting for its vector", embed=False)
    return served


@pytest.mark.parametrize(("call", "error", "argument"), [row[1:] for row in BAD], ids=[row[0] for row in BAD])
def test_a_bad_argument_is_refused_by_name_and_changes_nothing(
    memories: Memories, call: Call, error: type[Exception], argument: str
) -> None:
    embedder = memories.embedder()
    assert isinstance(embedder, FakeEmbedder)
    before, calls = _state(memories), embedder.calls
    with pytest.raises(Exception) as raised:  # the exact class is asserted below
        result = call(memories)
        if hasattr(result, "__next__"):
            next(result)
    assert type(raised.value) is error or (error is InvalidInputError and isinstance(raised.value, error)), (
        f"{type(raised.value).__name__}: {raised.value}"
    )
    assert _names(str(raised.value), argument), str(raised.value)
    assert "\n" not in str(raised.value)
    if isinstance(raised.value, InvalidInputError) and not isinstance(raised.value, MemoryNotFoundError):
        parameter, message = raised.value.parameter, str(raised.value)
        assert parameter is not None and parameter in message, parameter
        assert argument in parameter or message.startswith(f"{parameter}["), parameter  # or an item of it
    assert _state(memories) == before
    assert embedder.calls == calls


def test_filters_made_directly_select_what_their_keywords_select(memories: Memories) -> None:
    alice = memories.list(user="alice")
    assert [m.text for m in alice] == ["a memo tagged o p s"]
    assert memories.list(where=Filters(user=" alice ")) == alice  # names are stripped as add strips them
    assert Filters(user=" alice ") == Filters.of(user="alice")
    assert [m.text for m in memories.list(where=Filters(tags=["ops"]))] == ["a memo tagged ops"]
    assert Filters(tags=["s", "o", "s"]).tags == ("o", "s")
    assert Filters(meta={"k": "v"}) == Filters(meta=[("k", "v")]) == Filters.of(meta={"k": "v"})
    assert Filters(since="2000-01-01").since == "2000-01-01T00:00:00.000Z"
    utc = datetime(2000, 1, 1, tzinfo=timezone.utc)
    assert Filters(since="2000-01-01T02:00+02:00") == Filters.of(since=utc)
    assert len(memories.list(where=Filters(since="2000-01-01"))) == 3
    assert memories.forget(where=Filters(user=" alice "), dry_run=True).forgotten == tuple(alice)


def test_a_new_memory_is_cleaned_as_add_cleans(memories: Memories) -> None:
    made = NewMemory(" spaced ", user=" bob ", tags=["b", "a", "b"], meta={"k": "v"}, created_at="2026-01-01")
    assert (made.user, made.tags, made.created_at) == ("bob", ("a", "b"), "2026-01-01T00:00:00.000Z")
    (added,) = memories.add_many([made]).added
    by_add = memories.add("by add", user=" bob ", tags=["b", "a", "b"])
    stored, other = memories.get(added), memories.get(by_add.id)
    assert (stored.text, stored.user, stored.tags) == ("spaced", "bob", ("a", "b"))
    assert (other.user, other.tags) == (stored.user, stored.tags)
    big = 2**53 - 1
    assert NewMemory("x", id=big).id == big
    assert memories.get_many([2**63, 2**64, -1, 0]) == {}
