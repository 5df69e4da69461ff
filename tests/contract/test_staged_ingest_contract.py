"""A big ingest through the staging area (``remem.core.staged``), on every back-end: it stores
exactly what an ingest held in memory stores, nothing of it is visible until its move, and running
it again after an interruption resumes it (embedding only what was not staged)."""

from __future__ import annotations

import base64
import random
from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

import remem.backends.local.staged as local_staged
from remem import Memories
from remem.backends.base import Backend
from remem.core import staged
from remem.core.opening import model_catalog
from remem.errors import StoreError
from remem.testing import FAKE_MODEL, FakeEmbedder, fake_vector
from remem.types import ModelInfo


class Counting(FakeEmbedder):
    """A fake embedder that counts the documents it embeds."""

    def __init__(self, info: ModelInfo = FAKE_MODEL) -> None:
        super().__init__(info)
        self.texts = 0

    def embed_documents(self, texts: Any) -> Any:
        self.texts += len(texts)
        return super().embed_documents(texts)


def memories_of(backend: Backend, embedder: FakeEmbedder | None = None) -> Memories:
    return Memories(backend, model_catalog(environ={}), embedder or Counting())


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches, pages and move pages of a few rows: a small input crosses every boundary."""
    import remem.backends.postgres.staged as postgres_staged

    monkeypatch.setattr(staged, "STAGE_BATCH", 7)
    monkeypatch.setattr(staged, "PAGE", 3)
    monkeypatch.setattr(local_staged, "MOVE_PAGE", 4)
    monkeypatch.setattr(postgres_staged, "MOVE_PAGE", 4)


def _carried(text: str, scale: float = 1.0, model: ModelInfo = FAKE_MODEL) -> dict[str, Any]:
    vector = (fake_vector(text) * scale).astype("<f4").tobytes()
    return {"model": asdict(model), "windows": 1, "float32_base64": base64.b64encode(vector).decode()}


def records() -> list[dict[str, Any]]:
    """Export records: plain memories with duplicates (in the input and of a stored memory), two
    conversations given out of order (one around a stored turn), carried vectors (of this model,
    scaled, of another model) and a kept id."""
    rng = random.Random(7)
    found: list[dict[str, Any]] = [{"text": f"plain memory {i} about topic {i % 5}"} for i in range(30)]
    found += [
        {"text": "plain memory 3 about topic 3"},
        {"text": "already stored"},
        {"text": "plain memory 9 about topic 4"},
    ]
    start = datetime(2025, 1, 1, 9, 0, tzinfo=timezone.utc)
    turns = [
        {
            "text": f"turn {n} of the trip talk",
            "conversation": "trip",
            "user": "ann",
            "role": "user" if n % 2 else "assistant",
            "created_at": (start + timedelta(minutes=2 * n)).isoformat(),
        }
        for n in range(12)
    ]
    rng.shuffle(turns)
    found += turns
    found += [{"text": f"chat {n} without times", "conversation": "loose"} for n in range(5)]
    found += [
        {"text": "carried and kept", "vector": _carried("carried and kept")},
        {"text": "carried but scaled", "vector": _carried("carried but scaled", 2.0)},
        {
            "text": "carried by another model",
            "vector": _carried("x", model=ModelInfo("other", 64, "mean", "0" * 64)),
        },
        {"text": "keeps its id", "id": 5000, "tags": ["b", "a"], "meta": {"k": "v"}},
    ]
    return found


def _prepare(memories: Memories) -> None:
    """What the store holds before the ingest: a memory the input repeats, and a turn of the trip
    talk the input's turns come around."""
    memories.add("already stored")
    memories.add(
        "a stored turn of the trip talk", conversation="trip", user="ann", created_at="2025-01-01T09:09:00Z"
    )


def _contexts(backend: Backend) -> dict[int, str]:
    from remem.backends.local import LocalBackend

    if isinstance(backend, LocalBackend):
        rows = backend.records.conn.execute("SELECT id, context FROM memories")
        return {int(mid): str(context) for mid, context in rows}
    with backend.session.transaction() as cursor:  # type: ignore[attr-defined]
        cursor.execute(f"SELECT id, context FROM {backend.s}.memories")  # type: ignore[attr-defined]
        return {int(mid): str(context) for mid, context in cursor.fetchall()}


def _state(memories: Memories) -> tuple[list[dict[str, Any]], dict[int, str]]:
    exported = [
        {
            k: v
            for k, v in record.items()
            if k not in ("created_at", "updated_at") or record["conversation"] == "trip"
        }
        for record in memories.export(with_vectors=True)
    ]
    return exported, _contexts(memories.backend)


def test_a_staged_ingest_stores_what_one_held_in_memory_stores(
    open_backend: Callable[..., Backend], small_batches: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged_store, whole_store = memories_of(open_backend("staged")), memories_of(open_backend("whole"))
    for memories in (staged_store, whole_store):
        _prepare(memories)
    result = staged_store.import_(iter(records()))
    monkeypatch.setattr(staged, "STAGE_BATCH", 1000)
    expected = whole_store.import_(records())
    assert asdict(result) == asdict(expected)
    assert (len(result.added), len(result.duplicates), result.reused_vectors) == (51, 3, 1)
    assert result.duplicates == [6, 1, 12]  # of an earlier entry, of the stored memory, of an earlier one
    assert _state(staged_store) == _state(whole_store)
    assert staged_store.backend.staging().runs() == []


def _interrupted(items: list[Any], at: int) -> Iterator[Any]:
    for n, item in enumerate(items):
        if n == at:
            raise KeyboardInterrupt("killed")
        yield item


def _visible(memories: Memories) -> int:
    return len(list(memories.export()))


@pytest.mark.parametrize("cut", [10, 30, 50])
def test_an_interrupted_ingest_shows_nothing_and_running_it_again_resumes(
    open_backend: Callable[..., Backend], small_batches: None, cut: int
) -> None:
    embedder, whole = Counting(), Counting()
    memories, fresh = memories_of(open_backend(), embedder), memories_of(open_backend("whole"), whole)
    for store in (memories, fresh):
        _prepare(store)
    before, items = _visible(memories), records()
    with pytest.raises(KeyboardInterrupt):
        memories.import_(_interrupted(items, cut))
    assert _visible(memories) == before
    assert {hit.memory.text for hit in memories.search("plain memory 3 about topic 3", k=50)} == {
        "already stored",
        "a stored turn of the trip talk",
    }
    first = embedder.texts
    staged_rows = cut // staged.STAGE_BATCH * staged.STAGE_BATCH
    (run,) = memories.backend.staging().runs()
    assert first > 2 and run.rows == staged_rows  # batches before the cut were embedded and staged
    result = memories.import_(iter(items))
    assert result.resumed == staged_rows and f"{staged_rows:,} of its entries" in memories.notes[-1]
    expected = fresh.import_(items)
    assert embedder.texts == whole.texts  # each document embedded once over both runs
    assert asdict(result) | {"resumed": 0} == asdict(expected)
    assert len(result.added) == 51 and _visible(memories) == before + 51
    assert _state(memories) == _state(fresh)
    assert memories.backend.staging().runs() == []


def test_running_it_again_with_a_changed_input_stages_again_what_changed(
    backend: Backend, small_batches: None
) -> None:
    embedder = Counting()
    memories = memories_of(backend, embedder)
    items = [f"line {n} of a long list" for n in range(40)]
    with pytest.raises(KeyboardInterrupt):
        memories.add_many(_interrupted(items, 30))
    assert embedder.texts == 28
    items[10], items[20] = "line ten, changed", "line twenty, changed"
    result = memories.add_many(items[:35])  # shorter, too
    assert result.resumed == 26 and embedder.texts == 28 + 2 + 7
    assert [m.text for m in memories.list(limit=100)][::-1] == items[:35]
    assert memories.search("line ten, changed", k=1, mode="vector").hits[0].memory.text == "line ten, changed"
    with pytest.raises(KeyboardInterrupt):
        memories.add_many(_interrupted([f"other {n}" for n in range(40)], 30))
    memories.add_many(["other 0 changed", *(f"other {n}" for n in range(1, 40))])
    assert len(memories.backend.staging().runs()) == 1  # a new first batch is another ingest's


def test_what_another_ingest_wrote_over_the_staged_rows_is_never_moved(
    backend: Backend, small_batches: None
) -> None:
    """Two ingests whose inputs begin alike share a run: one that finds its rows rewritten by the
    other refuses to move them (and adds nothing)."""
    memories = memories_of(backend)
    items = [f"entry {n}" for n in range(20)]

    def rewritten() -> Iterator[str]:
        yield from items
        assert len(memories.backend.staging().runs()) == 1
        other = memories_of(memories.backend)
        with pytest.raises(KeyboardInterrupt):  # the other ingest, same first batch, then different
            other.add_many(_interrupted([*items[:7], *(f"other {n}" for n in range(13)), "x"], 20))

    with pytest.raises(StoreError, match="changed what this one staged; nothing was added"):
        memories.add_many(rewritten())
    assert _visible(memories) == 0


def _age(backend: Backend, days: float) -> None:
    """Make every staged run look untouched for ``days``."""
    from remem.backends.local import LocalBackend
    from remem.times import utc_iso

    moment = utc_iso(datetime.now(timezone.utc) - timedelta(days=days))
    if isinstance(backend, LocalBackend):
        conn = backend.staging().conn  # type: ignore[attr-defined]
        conn.execute("UPDATE runs SET updated_at = ?", (moment,))
        conn.close()
        return
    with backend.session.transaction(writes=True) as cursor:  # type: ignore[attr-defined]
        cursor.execute(f"UPDATE {backend.s}.ingest_runs SET updated_at = %s", (moment,))  # type: ignore[attr-defined]


def test_doctor_reports_a_staged_ingest_and_repair_discards_it_once_idle(
    backend: Backend, small_batches: None
) -> None:
    memories = memories_of(backend)
    with pytest.raises(KeyboardInterrupt):
        memories.add_many(_interrupted([f"entry {n}" for n in range(20)], 15))
    (check,) = [c for c in memories.doctor().checks if c.name == "staged ingests"]
    assert check.ok and "1 ingest interrupted or running (14 entries staged" in check.detail
    assert "may still be running" in check.detail and "resumes it" in check.detail
    report = memories.doctor(repair=True)
    assert report.ok and not any("discarded" in line for line in report.repaired)  # written just now
    _age(memories.backend, 0.01)
    report = memories.doctor(repair=True)
    assert report.repaired == ("discarded 1 interrupted ingest(s) (14 entries staged)",)
    assert memories.backend.staging().runs() == []
    assert [c.name for c in memories.doctor().checks if c.name == "staged ingests"] == []


def test_a_run_untouched_for_a_week_is_discarded_by_the_next_big_ingest(
    backend: Backend, small_batches: None
) -> None:
    memories = memories_of(backend)
    with pytest.raises(KeyboardInterrupt):
        memories.add_many(_interrupted([f"forgotten {n}" for n in range(20)], 15))
    _age(memories.backend, 8)
    memories.add_many([f"another {n}" for n in range(20)])
    assert any("Discarded 1 staged ingest(s) untouched for 7 days" in note for note in memories.notes)
    assert memories.backend.staging().runs() == []


def test_vectors_staged_with_another_model_are_embedded_again(
    open_backend: Callable[..., Backend], small_batches: None
) -> None:
    backend = open_backend()
    items = [f"entry {n}" for n in range(20)]
    with pytest.raises(KeyboardInterrupt):
        memories_of(backend).add_many(_interrupted(items, 15))
    other = Counting(ModelInfo("other-model", 64, "mean", "1" * 64))
    result = memories_of(backend, other).add_many(items)
    assert result.resumed == 14 and other.texts == 20 and memories_of(backend, other).model == other.info


def test_an_ingest_stopped_after_its_move_is_complete_and_running_it_again_adds_nothing(
    backend: Backend, small_batches: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    memories = memories_of(backend)
    items = [f"entry {n}" for n in range(20)]

    def killed(*_: Any) -> None:
        raise KeyboardInterrupt("killed after the move")

    with monkeypatch.context() as patch:
        patch.setattr(type(memories.backend.staging()), "discard", killed)
        with pytest.raises(KeyboardInterrupt):
            memories.add_many(items)
    assert _visible(memories) == 20
    again = memories.add_many(items)
    assert (again.added, again.duplicates, again.resumed) == ([], list(range(1, 21)), 20)
    assert memories.backend.staging().runs() == []
