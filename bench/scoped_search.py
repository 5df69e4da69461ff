"""What a search's scope costs, and a long query on each back-end: latency p50 / p95 (ms).

    python bench/scoped_search.py [--sizes 10000,100000] [--postgres URL] [--queries 40]
                                  [--dir DIR] [--compare OTHER_SRC] [--quick]

Each store (local, and PostgreSQL with ``--postgres``; kept in ``--dir`` and reused when run
again) holds synthetic memories of Zipf-distributed words, a tenth with CJK text, every one in
conversation ``all``: 1 % are user ``p1``'s, 10 % user ``p10``'s, the rest shared. A scope sees
1 % (``user=p1, conversation=all``), 10 % (``user=p10``, ``all``), 90 % (``user=p1``, ``all``,
``shared``: the shared memories too) or 100 % (``conversation=all``: then the scope's statistics
are the whole store's, and the local store ranks by FTS5's own ``bm25()``).
For each, ``--queries`` queries of 2-4 words run in keyword and hybrid mode, pinned
(``Memories.search(scope=...)``: the scope's own statistics) and unpinned (the same memories by
an ordinary filter, ``where=``: whole-store statistics, as before scopes) — the baseline, in the
same run. "after a write" is one pinned keyword search right after another user's add (the
scope's counts are counted again), the mean of 5. The embedder is ``FakeEmbedder``: the model's
cost is left out, the keyword lane and the store are what is measured (hybrid adds the vector
lane over the fake vectors).

Then a long query: 10,000 CJK characters (~10,000 distinct bigrams) in keyword mode, unpinned,
on each store; with ``--compare OTHER_SRC`` (e.g. ``git worktree add /tmp/old <commit>`` and its
``src``) the same searches also run with that source tree on ``PYTHONPATH``, in a subprocess of
the same run, on the same stores.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _harness
import remem
from remem.testing import FakeEmbedder

VOCABULARY = 20_000
SCOPES = {
    "1 %": {"user": "p1", "conversation": "all"},
    "10 %": {"user": "p10", "conversation": "all"},
    "90 %": {"user": "p1", "conversation": "all", "shared": True},
    "100 %": {"conversation": "all"},
}
LONG_CJK = "".join(chr(0x4E00 + n) for n in range(10_000))
MODES = ("keyword", "hybrid")


def _texts(size: int, seed: int = 7) -> list[remem.NewMemory]:
    """``size`` memories of Zipf-distributed words (1 % p1's, 10 % p10's, the rest shared)."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(VOCABULARY)]
    memories = []
    for n in range(size):
        words = [f"w{w}" for w in rng.choices(range(VOCABULARY), weights, k=rng.randint(6, 30))]
        if n % 10 == 3:
            start = rng.randrange(len(LONG_CJK) - 8)
            words.append(LONG_CJK[start : start + rng.randint(2, 8)])
        user = "p1" if n % 100 == 0 else "p10" if n % 10 == 1 else None
        memories.append(remem.NewMemory(" ".join(words), user=user, conversation="all"))
    return memories


def _queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    weights = [1 / (rank + 1) ** 0.5 for rank in range(VOCABULARY)]
    return [
        " ".join(f"w{w}" for w in rng.choices(range(VOCABULARY), weights, k=rng.randint(2, 4)))
        for _ in range(count)
    ]


def _open(place: str, size: int) -> remem.Memories:
    """The store of ``size`` memories at ``place`` (filled on first use)."""
    memories = remem.open(place, embedder=FakeEmbedder())
    held = memories.stats().memories
    if held < size:
        batch = _texts(size)[held:]
        for start in range(0, len(batch), 2_000):
            memories.add_many(batch[start : start + 2_000])
    return memories


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def _p(values: list[float]) -> str:
    ordered = sorted(values)
    return f"{statistics.median(ordered):.1f} / {ordered[int(0.95 * (len(ordered) - 1))]:.1f}"


def _latencies(memories: remem.Memories, queries: list[str], **how: Any) -> str:
    """p50 / p95 of ``queries`` searched as ``how`` says (after one search to warm up)."""
    search = functools.partial(memories.search, k=10, dates=False, **how)
    search(queries[0])
    return _p([_timed(functools.partial(search, query)) for query in queries])


def _scoped_rows(memories: remem.Memories, queries: list[str], label: str) -> list[str]:
    rows = []
    for name, fields in SCOPES.items():
        scope = remem.Filters.of(**fields)
        for mode in MODES:
            unpinned = _latencies(memories, queries, mode=mode, where=scope)
            pinned = _latencies(memories, queries, mode=mode, scope=scope)
            after = ""
            if mode == "keyword":
                writes = []
                for n in range(5):
                    memories.add(
                        f"w1 w2 another user's note {n} {time.time()}", user="other", conversation="all"
                    )
                    search = functools.partial(memories.search, queries[n], k=10, mode=mode, dates=False)
                    writes.append(_timed(functools.partial(search, scope=scope)))
                after = f"{statistics.fmean(writes):.1f}"
            rows.append(f"| {label} | {name} | {mode} | {unpinned} | {pinned} | {after} |")
    return rows


def _long_query(place: str) -> float:
    """ms of one keyword search of LONG_CJK (after one to warm the store)."""
    with remem.open(place, embedder=FakeEmbedder()) as memories:
        memories.search("w1", k=10, mode="keyword", dates=False)
        return _timed(functools.partial(memories.search, LONG_CJK, k=10, mode="keyword", dates=False))


def main() -> None:
    """Fill or reuse the stores, print both tables."""
    parser = _harness.parser(__doc__, postgres=True)
    parser.add_argument("--sizes", help="store sizes (default 10000,100000; 2000 quick)")
    parser.add_argument("--queries", type=int, help="queries per row (default 40; 10 quick)")
    parser.add_argument("--dir", type=Path, help="stores kept here (default /tmp/remem-scoped-bench)")
    parser.add_argument("--compare", help="another src tree: the long query with it too")
    parser.add_argument("--long-only", help=argparse.SUPPRESS)  # the child of --compare: JSON of places
    args = parser.parse_args()
    if args.long_only:
        print(json.dumps({place: _long_query(place) for place in json.loads(args.long_only)}))
        return
    print(_harness.machine())
    if not args.quick:
        args.sizes, args.queries = args.sizes or "10000,100000", args.queries or 40
        args.dir = args.dir or Path("/tmp/remem-scoped-bench")
        run(args)
        return
    with tempfile.TemporaryDirectory(prefix="remem-scoped-") as scratch:
        args.sizes, args.queries = args.sizes or "2000", args.queries or 10
        args.dir = args.dir or Path(scratch)
        run(args)


def run(args: argparse.Namespace) -> None:
    """Fill or reuse the stores, measure, print both tables."""
    places: list[tuple[str, int, str]] = []
    for size in (int(s) for s in args.sizes.split(",")):
        places.append((f"local {size:,}", size, str(args.dir / f"local-{size}")))
        if args.postgres:
            places.append(
                (f"postgres {size:,}", size, _harness.with_schema(args.postgres, f"scoped{size}", False))
            )
    queries = _queries(args.queries)
    rows = []
    for label, size, place in places:
        with _open(place, size) as memories:
            rows += _scoped_rows(memories, queries, label)
    print("Search latency, p50 / p95 ms (FakeEmbedder), unpinned (whole-store statistics) vs pinned:\n")
    print("| store | visible | mode | unpinned | pinned | pinned after a write |")
    print("|---|---|---|---:|---:|---:|")
    print("\n".join(rows))
    now = {place: _long_query(place) for _, _, place in places}
    before: dict[str, float] = {}
    if args.compare:
        child = subprocess.run(
            [sys.executable, __file__, "--long-only", json.dumps([p for _, _, p in places])],
            env={**os.environ, "PYTHONPATH": args.compare},
            capture_output=True,
            text=True,
            check=True,
        )
        before = json.loads(child.stdout.strip().splitlines()[-1])
    print("\nA 10,000-character CJK query, keyword mode, ms:\n")
    print(f"| store | {'--compare | ' if before else ''}this tree |")
    print(f"|---|{'---:|' if before else ''}---:|")
    for label, _, place in places:
        print(f"| {label} | {f'{before[place]:.0f} | ' if before else ''}{now[place]:.0f} |")


if __name__ == "__main__":
    main()
