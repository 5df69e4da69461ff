"""Should a store under ``--index auto`` switch itself to HNSW in the background of a write when it
crosses the threshold (``AUTO_HNSW_THRESHOLD``), or tell the user? What each choice costs, by size.

    python bench/auto_index.py [--sizes 50000,100000] [--queries 50] [--cli-runs 3] [--seed 0]

For each size: a store of that many clustered 384-d vectors (``bench/index.py``'s set, stamped with
the bundled model so the real CLI accepts it), then, with the exact index it has under ``auto``:
``remem add`` (a fresh process: what one write costs, most of it while holding the writers' lock),
``remem search --mode vector`` (a fresh process: model, index file), and in one process the vector
ranking (``run_search``, p50/p99) and one add. Then ``remem reindex`` — what ``auto`` does at that
size: it builds HNSW — timed (the writers' lock is held throughout: a switch inside a write would
hold it that long), and the same again with the HNSW index. The page cache is dropped before each
fresh process with ``--drop-caches`` (which slows everything else on the machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_start import drop_caches, remem_command
from index import Latency, build_store, cli_seconds, store_search, vector_set

if TYPE_CHECKING:
    from remem.arrays import FloatArray

QUERY = "how did we lay out the checkout screen?"


def fresh(argv: list[str], env: dict[str, str], runs: int, cold: bool) -> float:
    """Median wall seconds of ``runs`` fresh processes running ``argv`` (``{i}`` numbered per run)."""
    return statistics.median(
        cli_seconds([part.replace("{i}", str(i)) for part in argv], env, cold)[0] for i in range(runs)
    )


def warm(directory: Path, queries: FloatArray, kind: str) -> tuple[Latency, Latency]:
    """In one process, the index loaded: vector-mode ranking latency, and one write's (an add of a
    memory with its vector: what a long-lived ``remem mcp`` holds the writers' lock for)."""
    from remem import Filters, NewMemory
    from remem.backends.local import LocalBackend

    with LocalBackend.open(directory, create=False) as store:
        search = Latency.of(store_search(store, queries, Filters())[0])
        stamp = store.model
        assert stamp is not None
        writes = []
        for i, vector in enumerate(queries[:5]):
            started = time.perf_counter()
            store.add(NewMemory(text=f"an in-process {kind} write {i}"), vector, stamp)
            writes.append(time.perf_counter() - started)
        return search, Latency.of(writes)


def measure(directory: Path, queries: FloatArray, args: argparse.Namespace, kind: str) -> list[str]:
    """One size's rows for the index the store has now."""
    env = {**os.environ, "REMEM_HOME": str(directory)}
    add = fresh([args.remem, "add", f"a {kind} write number {{i}}"], env, args.cli_runs, args.cold)
    search = fresh([args.remem, "search", "--mode", "vector", QUERY], env, args.cli_runs, args.cold)
    lane, write = warm(directory, queries, kind)
    return [
        f"  {kind:5}  remem add {add:5.2f} s, fresh remem search --mode vector {search:5.2f} s; in one "
        f"process: vector ranking p50 {lane.p50:6.2f} ms p99 {lane.p99:6.2f} ms, "
        f"an add p50 {write.p50:5.0f} ms"
    ]


def one_size(size: int, args: argparse.Namespace) -> list[str]:
    """Build a store of ``size``, measure it exact, reindex (auto: HNSW), measure it again."""
    vectors, queries = vector_set("clustered", size, args.queries, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "store"
        built, _ = build_store(directory, vectors)
        rows = [f"{size:,} memories (store built in {built:.0f} s)"]
        rows += measure(directory, queries, args, "exact")
        env = {**os.environ, "REMEM_HOME": str(directory)}
        wall, stderr = cli_seconds([args.remem, "reindex"], env, args.cold)
        rows.append(f"  remem reindex (auto → HNSW): {wall:.1f} s wall; it said: {stderr.strip()}")
        rows += measure(directory, queries, args, "hnsw")
        index = directory / "vectors.faiss"
        if index.exists():
            rows.append(f"  index file {index.stat().st_size / 1e6:.0f} MB")
    return rows


def main() -> None:
    """Measure each size and print the rows."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="50000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--cli-runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--drop-caches", action="store_true", help="before each fresh process (root)")
    args = parser.parse_args()
    args.remem, args.cold = remem_command(), args.drop_caches and drop_caches()
    started = time.perf_counter()
    print(f"cpus {os.cpu_count()}, page cache dropped before each fresh process: {args.cold}")
    for size in (int(s) for s in args.sizes.split(",")):
        for row in one_size(size, args):
            print(row, flush=True)
    print(f"Total runtime: {time.perf_counter() - started:.0f} s.")


if __name__ == "__main__":
    main()
