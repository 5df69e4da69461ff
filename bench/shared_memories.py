"""One local ``Memories`` used by one thread and shared by several: add and search latency.

    python bench/shared_memories.py [--prefill 2000] [--ops 200] [--threads 4] [--rounds 3]
                                    [--compare OTHER_SRC]

Each round runs in a fresh process on a new store with ``FakeEmbedder`` (the model's cost is left
out: what is measured is the store) holding ``--prefill`` memories: ``--ops`` single-thread adds,
then ``--ops`` searches in each mode (hybrid, vector, keyword), each timed alone (median and p90,
ms); then ``--threads`` threads share the Memories, each doing ``--ops`` rounds of add + hybrid
search, timed as a whole (rounds per second, and whether any call failed). With ``--compare``, the
same rounds run alternately with another source tree (e.g. ``git archive`` of an older commit's
``src``) on ``PYTHONPATH``, so both are measured in the same run on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROUND = r"""
import json, statistics, sys, tempfile, threading, time
import remem
from remem.testing import FakeEmbedder

prefill, ops, threads = (int(a) for a in sys.argv[1:4])

def timed(call):
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000

def summary(values):
    values = sorted(values)
    return {"median": statistics.median(values), "p90": values[int(0.9 * (len(values) - 1))]}

out = {}
with remem.open(tempfile.mkdtemp() + "/s", embedder=FakeEmbedder()) as memories:
    memories.add_many([f"prefilled memory {i} on topic {i % 97}, thing {i % 13}" for i in range(prefill)])
    memories.warm_up()
    out["add"] = summary([timed(lambda: memories.add(f"single add {i} topic {i % 97}")) for i in range(ops)])
    for mode in ("hybrid", "vector", "keyword"):
        queries = [f"topic {i % 97} thing {i % 13}" for i in range(ops)]
        out[mode] = summary([timed(lambda: memories.search(q, mode=mode, k=5)) for q in queries])
    failures = []

    def work(worker):
        for i in range(ops):
            try:
                memories.add(f"thread {worker} add {i} topic {i % 97}")
                memories.search(f"topic {i % 97}", k=5)
            except Exception as exc:
                failures.append(type(exc).__name__)

    pool = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    started = time.perf_counter()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    rate = threads * ops / (time.perf_counter() - started)
    out["threads"] = {"rounds_per_s": rate, "failures": len(failures)}
print(json.dumps(out))
"""


def one_round(src: str, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """One measurement in a fresh process with ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": src}
    command = [sys.executable, "-c", ROUND, str(args.prefill), str(args.ops), str(args.threads)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefill", type=int, default=2000)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compare", help="another source tree (its src directory) to measure alternately")
    args = parser.parse_args()
    trees = {"this": str(Path(__file__).resolve().parent.parent / "src")}
    if args.compare:
        trees["other"] = str(Path(args.compare).resolve())
    results: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, src in trees.items():
            results[name].append(one_round(src, args))
    print(f"prefill {args.prefill}, {args.ops} ops, {args.rounds} rounds; medians of the rounds (ms)")
    for name, rounds in results.items():
        cells = [
            f"{op} {statistics.median(r[op]['median'] for r in rounds):.2f}"
            f" (p90 {statistics.median(r[op]['p90'] for r in rounds):.2f})"
            for op in ("add", "hybrid", "vector", "keyword")
        ]
        rate = statistics.median(r["threads"]["rounds_per_s"] for r in rounds)
        failed = sum(r["threads"]["failures"] for r in rounds)
        print(
            f"{name:5}  "
            + "  ".join(cells)
            + f"  | {args.threads} threads: {rate:.0f} rounds/s, {failed} failed"
        )


if __name__ == "__main__":
    main()
