"""`remem mcp` as an assistant meets it: the MCP SDK's own client over stdio.

    python bench/mcp_server.py [--sizes 1000 10000] [--queries 50] [--adds 20] [--quick]

For each store size it builds a store with the real bundled model (``_harness.build_store``), then
starts `remem mcp --store S` as a subprocess through ``mcp.client.stdio`` and measures: the time from
spawning to a finished handshake, to ``tools/list``, and to the first answer that used the vector lane
(the model warms up in the background; earlier answers come from the keyword lane); then warm
``memory_search`` latency (hybrid and vector, p50/p95 over distinct queries) and ``memory_add``
latency. The baseline measured in the same run is a cold `remem search` on the same store (a fresh
process per query, as a shell user meets it).
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _harness
from _harness import build_store, memory_texts, percentile, remem_command

QUERIES = [
    "how did we lay out the checkout screen?",
    "which database version do we run",
    "what happened to the billing service",
    "who owns the login flow",
    "why was the mobile app rewritten",
    "rate limits on the API gateway",
    "the security audit findings",
    "when is the March release",
    "what is blocking the search index",
    "feature flags in staging",
]


async def _call(session: Any, name: str, arguments: dict[str, Any]) -> Any:
    result = await session.call_tool(name, arguments)
    if result.is_error:
        raise RuntimeError(f"{name} failed: {result.content}")
    return result.structured_content


def _used_vectors(answer: dict[str, Any]) -> bool:
    hits = answer.get("hits") or []
    return any(hit.get("vector_rank") is not None for hit in hits)


async def measure_server(store: Path, queries: int, adds: int) -> dict[str, Any]:
    """Spawn the server over stdio and time it (see the module docstring)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    remem = remem_command()
    params = StdioServerParameters(command=remem, args=["mcp", "--store", str(store)])
    times: dict[str, Any] = {}
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        times["handshake"] = time.perf_counter() - started
        await session.list_tools()
        times["tools/list"] = time.perf_counter() - started
        while True:
            answer = await _call(session, "memory_search", {"query": QUERIES[0], "k": 5})
            if _used_vectors(answer):
                break
            await asyncio.sleep(0.05)
        times["first vector answer"] = time.perf_counter() - started
        texts = [f"{q} ({i})" for i in range(queries // len(QUERIES) + 1) for q in QUERIES][:queries]
        for mode in ("hybrid", "vector"):
            latencies = []
            for text in texts:
                tick = time.perf_counter()
                await _call(session, "memory_search", {"query": text, "k": 5, "mode": mode})
                latencies.append(time.perf_counter() - tick)
            times[f"search {mode}"] = latencies
        latencies = []
        for text in memory_texts(adds, seed=99):
            tick = time.perf_counter()
            await _call(session, "memory_add", {"text": f"mcp bench: {text}"})
            latencies.append(time.perf_counter() - tick)
        times["add"] = latencies
    return times


def cold_search(store: Path, runs: int) -> list[float]:
    """Wall seconds of ``runs`` fresh `remem search` processes on ``store``."""
    remem = remem_command()
    latencies = []
    for query in QUERIES[:runs]:
        tick = time.perf_counter()
        subprocess.run(
            [remem, "search", "--store", str(store), query],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        latencies.append(time.perf_counter() - tick)
    return latencies


def report(size: int, times: dict[str, Any], cold: list[float]) -> None:
    """One table per store size, in milliseconds."""
    baseline = statistics.median(cold) * 1000
    print(f"\n### {size:,} memories\n")
    print("| measure | p50 ms | p95 ms | × cold `remem search` p50 |")
    print("|---|---:|---:|---:|")
    print(
        f"| cold `remem search` (baseline, {len(cold)} processes) | {baseline:.0f} | "
        f"{percentile(cold, 0.95) * 1000:.0f} | 1.00 |"
    )
    for name in ("handshake", "tools/list", "first vector answer"):
        value = times[name] * 1000
        print(f"| spawn → {name} | {value:.0f} | | {value / baseline:.2f} |")
    for name in ("search hybrid", "search vector", "add"):
        values = times[name]
        p50 = statistics.median(values) * 1000
        print(
            f"| warm {name} ({len(values)}) | {p50:.1f} | {percentile(values, 0.95) * 1000:.1f} | "
            f"{p50 / baseline:.3f} |"
        )


def main() -> None:
    """Build each store, measure the server and the cold CLI, print the tables."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", help="store sizes (default 1000 10000; 100 quick)")
    parser.add_argument("--queries", type=int, help="warm searches per mode (default 50; 10 quick)")
    parser.add_argument("--adds", type=int, help="memory_add calls (default 20; 5 quick)")
    parser.add_argument("--cold-runs", type=int, help="cold `remem search` processes (default 5; 2 quick)")
    args = parser.parse_args()
    quick = args.quick
    args.sizes = args.sizes or ([100] if quick else [1000, 10_000])
    args.queries = args.queries or (10 if quick else 50)
    args.adds = args.adds or (5 if quick else 20)
    args.cold_runs = args.cold_runs or (2 if quick else 5)
    print(_harness.machine())
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "store"
            started = time.perf_counter()
            build_store(store, size)
            print(f"built a {size:,}-memory store in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            cold = cold_search(store, args.cold_runs)
            times = asyncio.run(measure_server(store, args.queries, args.adds))
            report(size, times, cold)


if __name__ == "__main__":
    main()
