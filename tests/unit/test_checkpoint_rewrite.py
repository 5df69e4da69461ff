"""The vector index checkpoint is rewritten without holding the writers' lock (issue 49): adds and
searches go on while a rewrite runs — in another thread of the process here, in other processes in
tests/integration/test_checkpoint_kills.py — and a long-lived process (``warm_up``) rewrites it in a
thread of its own, so that the write that crossed the bound does not wait for it either.

A rewrite is held just before it renames its new file into place (where the old code held the
writers' lock) by wrapping the real atomic writer, so that what runs meanwhile is certain."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers import vector_search
from remem.backends.local import sync, vectors
from remem.backends.local.maintenance import reindex
from remem.backends.local.store import LocalBackend
from remem.backends.local.vectors import VectorIndex
from remem.testing import FAKE_DIM, FAKE_MODEL, fake_vector
from remem.types import Filters, NewMemory

pytestmark = pytest.mark.slow  # threads racing a held rewrite

WAIT = 30.0


def _filled(directory: Path, kind: str, count: int = 60) -> LocalBackend:
    store = LocalBackend.open(directory, create=True)
    texts = [f"memory {n} about topic {n % 7}" for n in range(count)]
    store.add_many([NewMemory(t) for t in texts], np.stack([fake_vector(t) for t in texts]), FAKE_MODEL)
    reindex(store.home, kind)
    return store


def _resident(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalBackend:
    """An exact store rewritten 4 vectors behind (2 in a long-lived process), warmed up as a server's."""
    monkeypatch.setattr(sync, "LAG_BOUND", 4)
    store = _filled(tmp_path / "s", "exact")
    store.warm_up(FAKE_MODEL)
    return store


def _add(store: LocalBackend, text: str) -> int:
    return store.add(NewMemory(text), fake_vector(text), FAKE_MODEL).id


def _rewrites_done(started: Callable[[], bool] = lambda: True) -> None:
    """Wait (up to 30 s) until ``started()`` and no checkpoint rewrite thread is alive."""
    for _ in range(300):
        rewriting = any(t.name == "remem upkeep" and t.is_alive() for t in threading.enumerate())
        if started() and not rewriting:
            return
        threading.Event().wait(0.1)


class HeldRewrite:
    """Holds every index file save made on another thread than the test's just before its rename,
    until ``go`` is set; ``inside`` is set once one is held."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.inside, self.go = threading.Event(), threading.Event()
        real, test_thread = vectors.atomic_writer, threading.current_thread()

        @contextlib.contextmanager
        def held(*args: Any, **kwargs: Any) -> Iterator[Any]:
            with real(*args, **kwargs) as handle:
                yield handle
                if threading.current_thread() is not test_thread:
                    self.inside.set()
                    self.go.wait(WAIT)

        monkeypatch.setattr(vectors, "atomic_writer", held)


def _within(seconds: float, work: Callable[[], object]) -> object:
    """``work()``'s result when it ends within ``seconds`` on a thread of its own; fails otherwise."""
    done: list[object] = []
    thread = threading.Thread(target=lambda: done.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert done, f"it waited for the rewrite (still running after {seconds} s)"
    return done[0]


@pytest.mark.parametrize("kind", ["exact", "hnsw"])
def test_adds_and_searches_go_on_while_a_write_rewrites_the_checkpoint(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sync, "LAG_BOUND", 3)
    store = _filled(tmp_path / "s", kind)
    held = HeldRewrite(monkeypatch)
    writer = threading.Thread(target=lambda: [_add(store, f"crossing {n}") for n in range(4)], daemon=True)
    writer.start()  # its fourth add passes the bound and rewrites the file
    assert held.inside.wait(WAIT)
    other = LocalBackend.open(tmp_path / "s", create=False)  # another writer and reader meanwhile
    new = _within(10, lambda: _add(other, "zebra quokka"))
    hits = _within(10, lambda: vector_search(other, fake_vector("zebra quokka"), 1, Filters()))
    assert [h.memory.id for h in hits] == [new]  # type: ignore[attr-defined]
    held.go.set()
    writer.join(WAIT)
    saved = VectorIndex.load(store.index_path, FAKE_DIM)
    assert saved.header.generation == store.records.generation() - 1  # its snapshot: before the add
    assert sync.lag(store.records, store.index_path) == 1
    fresh = LocalBackend.open(tmp_path / "s", create=False)
    assert sorted(fresh.vector_index(FAKE_DIM).ids().tolist()) == store.records.vector_ids()
    assert [h.memory.id for h in vector_search(fresh, fake_vector("zebra quokka"), 1, Filters())] == [new]
    assert store.warnings == [] and fresh.warnings == []


def test_a_long_lived_store_rewrites_in_a_thread_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _resident(tmp_path, monkeypatch)
    held = HeldRewrite(monkeypatch)
    for n in range(3):  # past half the bound
        _within(10, lambda n=n: _add(store, f"crossing {n}"))
    assert held.inside.wait(WAIT)  # the rewrite started, and the writes returned without it
    forgotten = _within(10, lambda: store.forget([1]))
    assert forgotten == [1]
    held.go.set()
    for _ in range(100):
        if sync.lag(store.records, store.index_path) == 1:  # the forget since its snapshot
            break
        threading.Event().wait(0.1)
    assert sync.lag(store.records, store.index_path) == 1
    assert 1 not in [
        h.memory.id for h in vector_search(store, fake_vector("memory 1 about topic 1"), 5, Filters())
    ]
    assert sorted(store.vector_index(FAKE_DIM).ids().tolist()) == store.records.vector_ids()


def test_a_rewrite_never_replaces_a_newer_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _filled(tmp_path / "s", "exact")
    _add(store, "one more")
    held = HeldRewrite(monkeypatch)
    rewriter = threading.Thread(target=store.checkpoint, daemon=True)
    rewriter.start()
    assert held.inside.wait(WAIT)
    _add(store, "and another")
    reindex(store.home, "exact", force=True)  # a newer file, written under the writers' lock meanwhile
    newer = store.index_path.read_bytes()
    held.go.set()
    rewriter.join(WAIT)
    assert store.index_path.read_bytes() == newer
    assert store.warnings == []  # its new file was not taken for a killed writer's and removed
    assert [p.name for p in tmp_path.joinpath("s").iterdir() if p.name.endswith(".tmp")] == []


def test_a_long_lived_store_serves_its_new_checkpoint_without_a_search_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _resident(tmp_path, monkeypatch)
    added = [_add(store, f"crossing {n}") for n in range(3)]  # past half the bound: a rewrite starts
    _rewrites_done()
    assert sync.lag(store.records, store.index_path) == 0
    loads: list[Path] = []
    real = VectorIndex.load.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        VectorIndex, "load", classmethod(lambda cls, path, dim: loads.append(path) or real(cls, path, dim))
    )
    hits = vector_search(store, fake_vector("crossing 2"), 1, Filters())
    assert [h.memory.id for h in hits] == [added[2]]  # type: ignore[attr-defined]
    assert loads == []  # the rewrite's thread loaded it; the search only searched
    assert sorted(store.vector_index(FAKE_DIM).ids().tolist()) == store.records.vector_ids()


def test_a_search_while_the_new_checkpoint_is_being_served_catches_up_from_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _resident(tmp_path, monkeypatch)
    vector_search(store, fake_vector("memory 1"), 1, Filters())  # the index this process serves
    serving, go = threading.Event(), threading.Event()
    real_serve = LocalBackend._serve_new_checkpoint

    def held_serve(self: LocalBackend, dim: int) -> None:
        serving.set()
        go.wait(WAIT)
        real_serve(self, dim)

    monkeypatch.setattr(LocalBackend, "_serve_new_checkpoint", held_serve)
    loads: list[Path] = []
    real_load = VectorIndex.load.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        VectorIndex,
        "load",
        classmethod(lambda cls, path, *rest: loads.append(path) or real_load(cls, path, *rest)),
    )
    try:
        added = [_add(store, f"crossing {n}") for n in range(3)]  # past half the bound: a rewrite starts
        assert serving.wait(WAIT)  # the new file is in place, not yet served
        hits = vector_search(store, fake_vector("crossing 2"), 1, Filters())
        assert [h.memory.id for h in hits] == [added[2]]  # type: ignore[attr-defined]
        assert loads == []  # caught up from the log of deletions, which the rewrite had not pruned
    finally:
        go.set()
    _rewrites_done()
    assert loads == [store.index_path]  # the rewrite's thread loaded it once served
    assert sorted(store.vector_index(FAKE_DIM).ids().tolist()) == store.records.vector_ids()


def test_a_rewrite_in_the_background_extends_a_graph_on_one_thread_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from remem.backends.local import checkpoints, hnsw

    store = _resident(tmp_path, monkeypatch)
    asked: list[int | None] = []
    real = checkpoints.rewrite
    monkeypatch.setattr(
        checkpoints,
        "rewrite",
        lambda *args, **kwargs: asked.append(kwargs.get("threads")) or real(*args, **kwargs),
    )
    for n in range(3):  # past half the bound: a rewrite in a thread of its own
        _add(store, f"crossing {n}")
    _rewrites_done(lambda: bool(asked))
    assert asked == [1]
    store.checkpoint()  # in the foreground: as many as FAISS likes
    assert asked == [1, None]
    faiss = hnsw._faiss()
    before, seen = faiss.omp_get_max_threads(), []

    def limited() -> None:
        with hnsw.threads(1):
            seen.append(faiss.omp_get_max_threads())

    worker = threading.Thread(target=limited)
    worker.start()
    worker.join(WAIT)
    assert seen == [1] and faiss.omp_get_max_threads() == before  # the setting was the thread's own
