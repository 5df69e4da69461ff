"""Memories that expire, on every back-end: once ``expires_at`` has passed a memory leaves every
read unless asked (``include_expired``), ``forget_expired`` deletes exactly those, and export keeps
them (``remem.core.superseding``)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pytest

from remem import Memories
from remem.core.opening import model_catalog
from remem.errors import InvalidInputError
from remem.testing import FakeEmbedder

if TYPE_CHECKING:
    from remem.backends.base import Backend

PAST = "2001-02-03T04:05:06.000Z"
FILTERS: list[dict[str, Any]] = [{}, {"tags": ["ops"]}, {"user": "alice"}, {"user": "alice", "shared": True}]


@pytest.fixture
def memories(backend: Backend) -> Memories:
    """A Memories over a new, empty store of each back-end."""
    return Memories(backend, model_catalog(environ={}), FakeEmbedder())


def found_by(memories: Memories, query: str, **filters: Any) -> dict[str, set[int]]:
    """The ids each read path finds: every search mode, a quoted phrase, list, iter and context."""
    found = {
        f"search {mode}": {h.memory.id for h in memories.search(query, k=20, mode=mode, **filters)}
        for mode in ("vector", "keyword", "hybrid")
    }
    found.update(
        {
            f"phrase {mode}": {h.memory.id for h in memories.search(f'"{query}"', k=20, mode=mode, **filters)}
            for mode in ("vector", "keyword", "hybrid")
        }
    )
    found["list"] = {m.id for m in memories.list(**filters)}
    found["iter"] = {m.id for m in memories.iter(**filters)}
    found["context"] = {item.memory.id for item in memories.context(query, similar=10, **filters)}
    return found


def _imported(memories: Memories, *records: dict[str, Any]) -> list[int]:
    fields = {"user": "alice", "tags": ["ops"]}
    result = memories.import_([{**fields, **record} for record in records])
    return result.added


@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: ",".join(f) or "none")
def test_an_expired_memory_leaves_every_read_unless_included(
    memories: Memories, filters: dict[str, Any]
) -> None:
    expired, later, lasting = _imported(
        memories,
        {"text": "the parking garage code is 4711", "expires_at": PAST},
        {"text": "the parking garage code is 1234", "expires_at": "2999-01-01T00:00:00Z"},
        {"text": "the parking garage closes at midnight"},
    )
    assert memories.get(expired).expires_at == PAST
    for path, ids in found_by(memories, "parking garage code", **filters).items():
        assert expired not in ids and {later, lasting} & ids, path
    for path, ids in found_by(memories, "parking garage code", include_expired=True, **filters).items():
        assert expired in ids, path


def test_a_memory_expires_when_its_time_comes(memories: Memories) -> None:
    soon = datetime.now(timezone.utc) + timedelta(seconds=1.5)
    added = memories.add("the temporary door code is 2468", user="alice", expires_at=soon)
    assert memories.get(added.id).expires_at is not None
    assert added.id in found_by(memories, "temporary door code")["search hybrid"]
    time.sleep(max(0.0, (soon - datetime.now(timezone.utc)).total_seconds()) + 0.05)
    for path, ids in found_by(memories, "temporary door code").items():
        assert added.id not in ids, path
    assert memories.get(added.id).expires_at is not None  # still stored, still readable by id


def test_expires_at_must_still_be_to_come_when_added(memories: Memories) -> None:
    with pytest.raises(InvalidInputError, match="has passed") as caught:
        memories.add("too late", expires_at=PAST)
    assert caught.value.parameter == "expires_at"
    assert memories.list(include_expired=True) == []
    relative = memories.add("good for a month", expires_at="30d")
    stamp = memories.get(relative.id).expires_at
    assert stamp is not None and stamp > datetime.now(timezone.utc).isoformat()[:10]


def test_forget_expired_deletes_exactly_the_expired_ones(memories: Memories) -> None:
    expired = _imported(
        memories,
        {"text": "expired one", "expires_at": PAST},
        {"text": "expired two", "expires_at": "2020-01-01T00:00:00Z"},
    )
    kept = _imported(
        memories, {"text": "expires later", "expires_at": "2999-01-01T00:00:00Z"}, {"text": "never expires"}
    )
    old = memories.add("an expired fact, corrected", user="alice", tags=["ops"]).id
    memories.import_([{"text": "expired, superseded by nothing it knows", "expires_at": PAST}])
    expired.append(max(m.id for m in memories.iter(include_expired=True)))
    newer = memories.add("the corrected fact", user="alice", tags=["ops"], supersedes=old).id
    dry = memories.forget_expired(dry_run=True)
    assert [m.id for m in dry.forgotten] == expired and dry.dry_run
    assert len(list(memories.iter(include_expired=True, include_superseded=True))) == 7
    done = memories.forget_expired()
    assert [m.id for m in done.forgotten] == expired
    left = {m.id for m in memories.iter(include_expired=True, include_superseded=True)}
    assert left == {*kept, old, newer}
    assert memories.forget_expired().forgotten == ()


def test_export_includes_expired_memories_and_import_keeps_their_expiry(
    open_backend: Any,
) -> None:
    source = Memories(open_backend(), model_catalog(environ={}), FakeEmbedder())
    _imported(source, {"text": "expired one", "expires_at": PAST}, {"text": "not expired"})
    exported = list(source.export())
    assert [(r["text"], r["expires_at"]) for r in exported] == [("expired one", PAST), ("not expired", None)]
    assert [r["text"] for r in source.export(user="alice")] == ["expired one", "not expired"]
    target = Memories(open_backend("target"), model_catalog(environ={}), FakeEmbedder())
    target.import_(exported)
    assert [(m.text, m.expires_at) for m in target.iter(include_expired=True)] == [
        ("expired one", PAST),
        ("not expired", None),
    ]
    assert [m.text for m in target.list()] == ["not expired"]
