"""kill -9 at random moments of a local store's writes while its vector index file is a checkpoint:
adds, forgets, checkpoints rewritten past the lag bound (set low, so that they are frequent) — by
the writer after its commit, or in a thread of a long-lived process while it goes on writing — and
reindexes that write a lagging checkpoint; tag edits (keyword rows rewritten in place, logged for
the heads); and the keyword lane's stored heads taken again (by the
long-lived process's upkeep thread, and reindexes) every few writes. After every kill nothing
acknowledged is lost, no forgotten memory is found, the index a fresh reader and a long-lived one
catch up holds exactly SQLite's vectors, and the keyword lane's top through the stored heads is the
full query's; `doctor` is clean at the end."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import remem
from remem.backends.local import heads
from remem.backends.local.store import LocalBackend
from remem.testing import FAKE_DIM, FakeEmbedder
from remem.types import Filters

pytestmark = pytest.mark.slow  # real processes killed with SIGKILL

#: A child doing random writes and saying each one once it returned: "A id", "F id", "R"; and each
#: forget before it asks ("f id"): a kill after its commit and before its answer may leave it done.
WRITES = """
import random, sys
import remem
from remem.backends.local import heads, stored_heads, sync
from remem.testing import FakeEmbedder
sync.LAG_BOUND = int(sys.argv[3])
heads.PRUNE_FROM, heads.CHEAP_HOLDERS, stored_heads.REFRESH_AFTER = 0, 50, int(sys.argv[3])
rng = random.Random(int(sys.argv[2]))
with remem.open(sys.argv[1], embedder=FakeEmbedder()) as memories:
    if sys.argv[4] == "background":
        memories.warm_up()  # a long-lived process: checkpoints are rewritten in a thread
    live = [m.id for m in memories.list(limit=100_000)]
    print("ready", flush=True)
    for n in range(100_000):
        roll = rng.random()
        if roll < 0.5 or not live:
            memory_id = memories.add(f"kill {sys.argv[2]} memory {n} word{n % 97}").id
            live.append(memory_id)
            print("A", memory_id, flush=True)
        elif roll < 0.65:  # its keyword row rewritten in place: a candidate of the heads it had
            memories.edit(rng.choice(live), tags=[f"word{n % 89}", "topic"])
        elif roll < 0.95:
            gone = live.pop(rng.randrange(len(live)))
            print("f", gone, flush=True)  # asked: gone or not if killed before the answer
            memories.forget([gone])
            print("F", gone, flush=True)
        else:
            memories.reindex()
            print("R", flush=True)
"""


#: Queries of the seed memories' and the children's words.
KEYWORD_QUERIES = ["topic 3 memory", "word5 kill", "seed 17", "word12 topic 4", "memory kill 3"]


def _store(directory: Path, kind: str, size: int) -> None:
    with remem.open(directory, embedder=FakeEmbedder()) as memories:
        memories.add_many([f"seed memory {n} about topic {n % 31}" for n in range(size)])
        memories.reindex(index=kind)


def _run_and_kill(
    directory: Path, seed: int, bound: int, after: float, rewrites: str
) -> tuple[set[int], set[int], set[int]]:
    """One child killed ``after`` seconds after its first acknowledged write (on a busy machine a
    child may take longer than ``after`` to make one): (ids it acknowledged adding, forgetting, or
    asked to forget without an answer: the forget in flight at the kill may have committed; such an
    id is counted as forgotten for the check of adds only)."""
    child = subprocess.Popen(
        [sys.executable, "-c", WRITES, str(directory), str(seed), str(bound), rewrites],
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == b"ready"
    first = child.stdout.readline()
    time.sleep(after)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(30)
    added, forgotten, asked = set[int](), set[int](), set[int]()
    for line in (first + child.stdout.read()).decode().splitlines():
        what, *rest = line.split()
        if what == "A" and rest:
            added.add(int(rest[0]))
        elif what == "F" and rest:
            forgotten.add(int(rest[0]))
        elif what == "f" and rest:
            asked.add(int(rest[0]))
    return added, forgotten, asked - forgotten


def _check(
    directory: Path,
    reader: LocalBackend,
    added: set[int],
    forgotten: set[int],
    unsure: set[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with LocalBackend.open(directory, create=False) as fresh:
        stored = set(fresh.records.vector_ids())
        memories = {m.id for m in fresh.records.iter_all()}
        assert added - forgotten - unsure <= memories, "an acknowledged add was lost"
        assert not forgotten & memories, "an acknowledged forget came back"
        for store in (fresh, reader):  # a cold reader, and a long-lived one catching up
            index = store.vector_index(FAKE_DIM)
            assert sorted(index.ids().tolist()) == sorted(stored)
            query = np.ones(FAKE_DIM, dtype=np.float32) / np.sqrt(FAKE_DIM)
            assert {vid for vid, _ in index.search(query, len(stored))} <= stored
        assert fresh.warnings == []
        for text in KEYWORD_QUERIES:  # a new process: the stored heads, met for the first time
            monkeypatch.setattr(heads, "PRUNE_FROM", 0)
            through_heads = fresh.keyword_top(text, Filters(), 10)
            monkeypatch.setattr(heads, "PRUNE_FROM", 10**12)  # the same lane scoring every match
            assert through_heads == fresh.keyword_top(text, Filters(), 10), text


@pytest.mark.parametrize(
    ("kind", "size", "kills", "rewrites"),
    [
        ("exact", 20_000, 20, "after the write"),
        ("hnsw", 2_000, 12, "after the write"),
        ("exact", 20_000, 12, "background"),
        ("hnsw", 2_000, 8, "background"),
    ],
)
def test_kill_9_during_adds_forgets_checkpoints_and_reindexes(
    tmp_path: Path, kind: str, size: int, kills: int, rewrites: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "store"
    _store(directory, kind, size)
    reader = LocalBackend.open(directory, create=False)
    rng, added, forgotten, unsure = random.Random(kills), set[int](), set[int](), set[int]()
    for seed in range(kills):
        bound, after = rng.choice([3, 10, 40]), rng.uniform(0.05, 0.6)
        more, gone, maybe = _run_and_kill(directory, seed, bound, after, rewrites)
        added |= more
        forgotten |= gone
        unsure |= maybe
        _check(directory, reader, added, forgotten, unsure, monkeypatch)
    assert len(added) >= kills // 2 and forgotten  # the kills landed among writes
    with LocalBackend.open(directory, create=False) as fresh:  # the children took heads to check
        assert fresh.records.conn.execute("SELECT count(*) FROM keyword_heads").fetchone()[0] > 0
    with remem.open(directory, embedder=FakeEmbedder()) as memories:
        report = memories.doctor()
        assert report.ok, report
