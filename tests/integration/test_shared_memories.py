"""One ``Memories`` on a local store shared by real threads (as a server shares it), with another
process writing to the same store meanwhile: every acknowledged write is stored, no call fails,
and the vector index (in memory and on disk) agrees with the database."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import remem
from remem.errors import StoreClosedError
from remem.testing import FakeEmbedder

pytestmark = pytest.mark.slow  # real processes, kills or races (the slow tier)

THREADS, ROUNDS = 4, 60

OTHER_PROCESS = """
import sys
from pathlib import Path
import remem
from remem.testing import FakeEmbedder
store, stop = sys.argv[1], Path(sys.argv[2])
with remem.open(store, embedder=FakeEmbedder()) as memories:
    i = 0
    while i < 5 or not stop.exists():
        added = memories.add(f"process note p{i} about topic {i % 7}").id
        if i % 4 == 3:
            assert [m.id for m in memories.forget([added]).forgotten] == [added]
            print("forgot", added, flush=True)
        else:
            print("added", added, flush=True)
        i += 1
"""


def _work(memories: remem.Memories, worker: int, kept: dict[int, str], errors: list[str]) -> None:
    """Adds, reads, searches in every mode, edits and forgets of this worker's own memories;
    ``kept``: what it was told is stored (id → text), ``errors``: every call that failed."""
    rng = random.Random(worker)
    for i in range(ROUNDS):
        try:
            text = f"thread {worker} note t{worker}n{i} about topic {i % 7}"
            added = memories.add(text, tags=[f"w{worker}"])
            kept[added.id] = text
            assert memories.get(added.id).text == text
            found = memories.search(f"topic {i % 7}", k=5, mode=("hybrid", "vector", "keyword")[i % 3])
            assert all(hit.memory.text for hit in found)
            if i % 5 == 4:
                target, edited = rng.choice(sorted(kept)), f"thread {worker} edited t{worker}e{i}"
                assert memories.edit(target, edited).text == edited
                kept[target] = edited
            if i % 7 == 6:
                target = rng.choice(sorted(kept))
                assert [m.id for m in memories.forget([target]).forgotten] == [target]
                del kept[target]
            assert len(memories.list(limit=3, tags=[f"w{worker}"])) <= 3
        except Exception as exc:
            errors.append(f"thread {worker} round {i}: {type(exc).__name__}: {exc}")


def _run_threads(memories: remem.Memories) -> tuple[dict[int, str], list[str]]:
    kept: list[dict[int, str]] = [{} for _ in range(THREADS)]
    errors: list[str] = []
    threads = [threading.Thread(target=_work, args=(memories, w, kept[w], errors)) for w in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {mid: text for part in kept for mid, text in part.items()}, errors


def _assert_index_agrees(memories: remem.Memories, stored: dict[int, str]) -> None:
    """The warm index holds exactly the stored memories, and the store's checks all pass."""
    everything = memories.search("anything at all", mode="vector", k=len(stored) + 50)
    assert {hit.memory.id for hit in everything} == set(stored)
    report = memories.doctor()
    assert report.ok, [check for check in report.checks if not check.ok]


def test_threads_sharing_one_memories_lose_nothing(tmp_path: Path) -> None:
    with remem.open(tmp_path / "s", embedder=FakeEmbedder()) as memories:
        memories.add("a memory from before the threads")
        kept, errors = _run_threads(memories)
        assert errors == []
        stored = {m.id: m.text for m in memories.iter()}
        assert stored == {1: "a memory from before the threads", **kept}
        _assert_index_agrees(memories, stored)
    with remem.open(tmp_path / "s", embedder=FakeEmbedder()) as again:  # the file, read afresh
        _assert_index_agrees(again, stored)


def test_threads_and_another_process_on_one_store_lose_nothing(tmp_path: Path) -> None:
    store, stop = tmp_path / "s", tmp_path / "stop"
    with remem.open(store, embedder=FakeEmbedder()) as memories:
        memories.add("a memory from before the threads")
        other = subprocess.Popen(
            [sys.executable, "-c", OTHER_PROCESS, str(store), str(stop)], stdout=subprocess.PIPE, text=True
        )
        assert other.stdout is not None
        first = other.stdout.readline()  # the other process writes before the threads start …
        try:
            kept, errors = _run_threads(memories)
        finally:
            stop.touch()  # … and until they are done
            told = [first, *other.stdout]
            assert other.wait(60) == 0
        assert errors == []
        by_process = {int(line.split()[1]) for line in told if line.startswith("added")}
        assert len(told) > 5 and by_process
        stored = {m.id: m.text for m in memories.iter()}
        assert {mid: text for mid, text in stored.items() if mid not in by_process} == {
            1: "a memory from before the threads",
            **kept,
        }
        assert by_process <= set(stored) and all(stored[mid].startswith("process note") for mid in by_process)
        _assert_index_agrees(memories, stored)


def test_closing_a_memories_that_threads_use_stops_them_cleanly(tmp_path: Path) -> None:
    """Threads still adding when the Memories is closed get StoreClosedError (not "damaged");
    what they were told is stored is stored."""
    memories = remem.open(tmp_path / "s", embedder=FakeEmbedder())
    acknowledged: list[int] = []
    failures: list[BaseException] = []
    started = threading.Barrier(THREADS + 1)

    def add_until_closed(worker: int) -> None:
        started.wait()
        try:
            for i in range(100_000):
                acknowledged.append(memories.add(f"thread {worker} memory {i}").id)
        except Exception as exc:
            failures.append(exc)

    threads = [threading.Thread(target=add_until_closed, args=(w,)) for w in range(THREADS)]
    for thread in threads:
        thread.start()
    started.wait()
    while len(acknowledged) < 20:
        threading.Event().wait(0.01)
    memories.close()
    for thread in threads:
        thread.join()
    assert [type(exc) for exc in failures] == [StoreClosedError] * THREADS, failures
    assert all("this Memories is closed" in str(exc) for exc in failures)
    with remem.open(tmp_path / "s", embedder=FakeEmbedder()) as again:
        assert set(acknowledged) <= {m.id for m in again.iter()}
        assert again.doctor().ok


def _turns_and_waiting(
    memories: remem.Memories, worker: int, kept: dict[int, str], errors: list[str]
) -> None:
    """Turns of a conversation, memories stored without vectors and embedded later, and exports."""
    for i in range(ROUNDS // 2):
        try:
            text = f"thread {worker} turn t{worker}n{i} about topic {i % 7}"
            added = memories.add(text, embed=i % 3 != 0, conversation=f"c{worker}" if i % 2 else None)
            kept[added.id] = text
            memories.search(f"topic {i % 7}", k=3)
            if i % 5 == 0:
                memories.embed_pending(limit=3)
            assert added.id in {record["id"] for record in memories.export()}
        except Exception as exc:
            errors.append(f"thread {worker} round {i}: {type(exc).__name__}: {exc}")


def test_threads_with_turns_waiting_memories_and_reindexes_lose_nothing(tmp_path: Path) -> None:
    kept: list[dict[int, str]] = [{} for _ in range(THREADS)]
    errors: list[str] = []
    stop = threading.Event()

    def reindex_until_stopped() -> None:
        for n in range(1_000_000):
            if stop.is_set():
                return
            try:
                memories.reindex(index=("exact", "hnsw")[n % 2], force=True)
            except Exception as exc:
                errors.append(f"reindex: {type(exc).__name__}: {exc}")

    with remem.open(tmp_path / "s", embedder=FakeEmbedder()) as memories:
        memories.add("a memory from before the threads")
        args = [(memories, w, kept[w], errors) for w in range(THREADS)]
        threads = [threading.Thread(target=_turns_and_waiting, args=a) for a in args]
        threads.append(threading.Thread(target=reindex_until_stopped))
        for thread in threads:
            thread.start()
        for thread in threads[:-1]:
            thread.join()
        stop.set()
        threads[-1].join()
        assert errors == []
        memories.embed_pending()
        stored = {m.id: m.text for m in memories.iter()}
        assert stored == {1: "a memory from before the threads", **{k: v for p in kept for k, v in p.items()}}
        _assert_index_agrees(memories, stored)
