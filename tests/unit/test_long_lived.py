"""A long-lived Memories (a server): memories stored before the model is loaded, warm-up, and a
cached vector index that follows what other writers do to the store."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import helpers
import remem
from helpers import run_cli
from remem.embedders.catalog import ModelCatalog, ModelChoice
from remem.testing import FakeEmbedder


def test_memories_added_without_embedding_wait_and_are_embedded_later(tmp_path: Path) -> None:
    fake = FakeEmbedder()
    with remem.open(tmp_path / "s", embedder=fake) as memories:
        waiting = memories.add("the deploy of E7731 failed twice", embed=False)
        assert (fake.calls, memories.pending_count(), memories.model) == (0, 1, None)
        assert [h.memory.id for h in memories.search("E7731", mode="keyword")] == [waiting.id]
        assert list(memories.search("deploy failed", mode="vector")) == []  # no vectors yet
        assert memories.embed_pending() == 1
        assert memories.pending_count() == 0 and memories.model == fake.info
        assert memories.search("deploy failed", mode="vector")[0].memory.id == waiting.id


def test_reindex_embeds_what_was_waiting(tmp_path: Path) -> None:
    with remem.open(tmp_path / "s", embedder=FakeEmbedder()) as memories:
        memories.add("embedded at once")
        memories.add("stored while the model was loading", embed=False)
        outcome = memories.reindex()
        assert outcome.embedded_pending == 1 and memories.pending_count() == 0
        assert memories.doctor().ok


def test_the_cli_reindex_embeds_waiting_memories_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s"
    with remem.open(store, embedder=FakeEmbedder()) as memories:
        memories.add("stored while the model was loading", embed=False)
    monkeypatch.setitem(helpers.CLI, "embedder", FakeEmbedder())
    result = run_cli(["reindex"], store)
    assert result.code == 0 and "Embedded 1 memories that were waiting" in result.stderr


def test_a_warm_store_sees_what_another_writer_added(tmp_path: Path) -> None:
    """The index loaded by one Memories is caught up from the database when another process (here a
    second Memories) writes, so the long-lived one never misses a memory."""
    store = tmp_path / "s"
    with remem.open(store, embedder=FakeEmbedder()) as server:
        server.add("the first memory about lunch")
        server.warm_up()
        with remem.open(store, embedder=FakeEmbedder()) as cli:
            added = cli.add("a second memory about the kitchen sink").id
        assert server.search("kitchen sink", mode="vector", k=1)[0].memory.id == added
        server.add("a third memory about dinner")
        with remem.open(store, embedder=FakeEmbedder()) as cli:
            cli.forget([added])
            assert [h.memory.text for h in cli.search("dinner", mode="vector", k=1)] == [
                "a third memory about dinner"
            ]
        assert added not in [h.memory.id for h in server.search("kitchen sink", mode="vector", k=5)]


def test_a_reindex_to_another_kind_elsewhere_is_not_undone_by_a_warm_writer(tmp_path: Path) -> None:
    store = tmp_path / "s"
    with remem.open(store, embedder=FakeEmbedder()) as server:
        server.add("one")
        server.warm_up()  # caches an exact index
        with remem.open(store, embedder=FakeEmbedder()) as other:
            other.reindex(index="hnsw")
        server.add("two")  # must write an HNSW index file, not its cached exact one
        stats = server.stats()
        assert str(stats.index).startswith("hnsw"), stats
        assert server.doctor().ok


def _asked_at_once(memories: remem.Memories, threads: int) -> list[object]:
    """What ``memories.embedder()`` gave each of ``threads`` threads asking at the same moment."""
    start, got = threading.Barrier(threads), []

    def ask() -> None:
        start.wait()
        got.append(memories.embedder())

    workers = [threading.Thread(target=ask) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return got


def test_threads_asking_for_the_model_at_once_load_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server's threads share one Memories: the first loads the model, the others wait for it."""
    loads: list[int] = []

    def slow_load(self: ModelCatalog, recorded: object, location: str) -> ModelChoice:
        loads.append(threading.get_ident())
        time.sleep(0.3)  # loading a model takes a while: the other threads ask meanwhile
        return ModelChoice(FakeEmbedder())  # type: ignore[arg-type]

    monkeypatch.setattr(ModelCatalog, "for_store", slow_load)
    for _ in range(3):
        loads.clear()
        with remem.open(tmp_path / "s") as memories:
            got = _asked_at_once(memories, 4)
        assert len(loads) == 1 and len(got) == 4 and all(embedder is got[0] for embedder in got)
