"""``stats()`` on every back-end: the same typed StoreStats, the same counts, names and time span
for the same memories (only the index's description and the size are a back-end's own)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from remem import Memories, ModelCatalog
from remem.backends.links import Link
from remem.backends.local import LocalBackend, settings
from remem.backends.shapes import IndexState
from remem.backends.summary import TOP
from remem.reports import Check, StoreStats
from remem.testing import FAKE_MODEL, FakeEmbedder, fake_vector
from remem.types import NewMemory

if TYPE_CHECKING:
    from remem.backends.base import Backend

FIELDS = [
    "memories", "vectors", "superseded", "expired", "oldest", "newest", "model", "index", "index_setting",
    "disk_bytes", "by_user", "by_conversation", "by_tag", "by_role",
]  # fmt: skip
#: Expiries of four memories: two past, one to come, one never.
EXPIRIES = ("2020-01-01T00:00:00.000Z", "2021-06-01T00:00:00.000Z", "2999-01-01T00:00:00.000Z", None)
USERS = 22  # more than TOP: the last two are left out


def _memory(i: int) -> NewMemory:
    """The i-th of 25 memories: u01 has 3, u02 has 2, u03 … u22 one each; the first 5 are in
    conversation c1; 10 said by the user, 4 by the assistant, 11 by nobody; every one tagged t-a,
    the first 3 also t-b; made one day apart from 2026-01-01 (with the user's number as the hour)."""
    user = 1 if i < 3 else 2 if i < 5 else i - 2
    role = "user" if i < 10 else "assistant" if i < 14 else None
    return NewMemory(
        f"memory number {i}",
        user=f"u{user:02d}",
        conversation="c1" if i < 5 else None,
        role=role,
        tags=("t-a", "t-b") if i < 3 else ("t-a",),
        created_at=f"2026-01-{i + 1:02d}T{user:02d}:00:00.000Z",
    )


def test_stats_is_the_same_store_stats_on_every_back_end(backend: Backend) -> None:
    memories = [_memory(i) for i in range(25)]
    backend.add_many(memories, [fake_vector(m.text).reshape(1, -1) for m in memories], FAKE_MODEL)
    stats = backend.stats()
    assert type(stats) is StoreStats
    assert (stats.memories, stats.vectors, stats.model, stats.index_setting) == (25, 25, FAKE_MODEL, "auto")
    assert (stats.oldest, stats.newest) == ("2026-01-01T01:00:00.000Z", "2026-01-25T22:00:00.000Z")
    users = {"u01": 3, "u02": 2} | {f"u{n:02d}": 1 for n in range(3, TOP + 1)}
    assert list(stats.by_user.items()) == list(users.items())
    assert list(stats.by_conversation.items()) == [("(none)", 20), ("c1", 5)]
    assert list(stats.by_tag.items()) == [("t-a", 25), ("t-b", 3)]
    assert list(stats.by_role.items()) == [("(none)", 11), ("user", 10), ("assistant", 4)]
    assert isinstance(stats.index, str) and isinstance(stats.disk_bytes, int) and stats.disk_bytes > 0


def test_the_record_of_stats_is_the_same_json_on_every_back_end(backend: Backend) -> None:
    memories = [_memory(i) for i in (0, 5, 12)]
    backend.add_many(memories, [fake_vector(m.text).reshape(1, -1) for m in memories], FAKE_MODEL)
    record = backend.stats().record()
    assert list(record) == FIELDS
    del record["index"], record["disk_bytes"]
    assert record == {
        "memories": 3,
        "vectors": 3,
        "superseded": 0,
        "expired": 0,
        "oldest": "2026-01-01T01:00:00.000Z",
        "newest": "2026-01-13T10:00:00.000Z",
        "model": f"{FAKE_MODEL.name} ({FAKE_MODEL.dim}-d, mean pooling)",
        "index_setting": "auto",
        "by_user": {"u01": 1, "u03": 1, "u10": 1},
        "by_conversation": {"(none)": 2, "c1": 1},
        "by_tag": {"t-a": 3, "t-b": 1},
        "by_role": {"user": 2, "assistant": 1},
    }


def test_stats_and_doctor_count_superseded_and_expired_memories(backend: Backend) -> None:
    memories = [replace(_memory(i), expires_at=expiry) for i, expiry in enumerate(EXPIRIES)]
    backend.add_many(memories, [fake_vector(m.text).reshape(1, -1) for m in memories], FAKE_MODEL)
    backend.supersede([Link(1, 2, "u01", "c1", "2026-02-01T00:00:00.000Z")])
    stats = backend.stats()
    assert (stats.memories, stats.superseded, stats.expired) == (4, 1, 2)
    checks = {check.name: check for check in backend.doctor(False)[0]}
    assert checks["memory links"] == Check("memory links", True, "1 superseded, 2 expired")


def test_stats_of_an_empty_store(backend: Backend) -> None:
    stats = backend.stats()
    assert type(stats) is StoreStats
    assert (stats.memories, stats.vectors, stats.oldest, stats.newest) == (0, 0, None, None)
    assert stats.model is None
    assert (stats.by_user, stats.by_conversation, stats.by_tag, stats.by_role) == ({}, {}, {}, {})


def test_index_state_where_the_kind_waits_for_a_reindex(
    backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A local store's exact index stays exact under ``auto`` until a reindex: its state agrees with
    ``stats`` and, past the size, ``index_advice`` says to reindex. PostgreSQL's index never waits
    (``auto`` is pgvector's HNSW from the first vector): no state, never advice."""
    monkeypatch.setattr(settings, "AUTO_HNSW_THRESHOLD", 2)
    memories = [_memory(i) for i in range(3)]
    backend.add_many(memories, [fake_vector(m.text).reshape(1, -1) for m in memories], FAKE_MODEL)
    state, stats = backend.index_state(), backend.stats()
    served = Memories(backend, ModelCatalog(tmp_path / "models"), embedder=FakeEmbedder())
    if isinstance(backend, LocalBackend):
        assert state == IndexState(requested="auto", kind="exact", vectors=stats.vectors, hnsw_from=2)
        assert served.index_advice() is not None and served.doctor().advice == (served.index_advice(),)
    else:
        assert state is None and served.index_advice() is None and served.doctor().advice == ()
