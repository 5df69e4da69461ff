"""A client that starts `remem mcp` for one search: how long the model takes to load, and the answer.

    python bench/mcp_first_call.py [--runs 5] [--cold]

Builds a one-memory store with the CLI, then, for each run, spawns `remem mcp --store S` through the
MCP SDK's stdio client, asks `memory_search` a paraphrase (no word shared with the memory) as soon
as the handshake is done, and prints: spawn → handshake, the call's own time, spawn → answer,
whether the answer used the vector lane, and the warm-up's time as the server reports it on stderr
("model ready in X s": store opened, ONNX session loaded, index read). With ``--cold`` the page
cache of every file the server reads (the interpreter's library, the venv, remem's source and model)
is dropped before each run with posix_fadvise(DONTNEED) (no root needed; pages another process
has mapped stay cached). This is the evidence for ``SEARCH_WAIT_SECONDS`` in remem/mcp/service.py.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

import remem

MEMORY = "The billing service retries a failed charge three times"
PARAPHRASE = "how often is a declined payment tried again"


def evict(roots: list[Path]) -> int:
    """Drop the page cache of every file under ``roots``; returns how many files."""
    count = 0
    for root in roots:
        for path in root.rglob("*"):
            try:
                if not path.is_file() or path.is_symlink():
                    continue
                descriptor = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
                count += 1
            finally:
                os.close(descriptor)
    return count


def server_files() -> list[Path]:
    """What the server process reads: the standard library, the venv, remem's source and model."""
    paths = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    return sorted({Path(p) for p in paths} | {Path(remem.__file__).parent})


async def first_call(store: Path, errlog: Any) -> dict[str, Any]:
    """Spawn the server, search at once after the handshake; the times and whether vectors answered."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "remem", "mcp", "--store", str(store)], env=dict(os.environ)
    )
    started = time.perf_counter()
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        handshake = time.perf_counter() - started
        result = await session.call_tool("memory_search", {"query": PARAPHRASE, "k": 1})
        answered = time.perf_counter() - started
        found = result.structured_content or {}
    hits = found.get("hits") or []
    return {
        "handshake": handshake,
        "call": answered - handshake,
        "answer": answered,
        "by meaning": bool(hits) and hits[0].get("vector_rank") is not None,
    }


def main() -> None:
    """Measure ``--runs`` cold starts of the server, each asked one search at once."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="drop the page cache before each run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        subprocess.run(
            [sys.executable, "-m", "remem", "add", MEMORY, "--store", str(store)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        ready: list[float] = []
        for run in range(args.runs):
            evicted = evict(server_files()) if args.cold else 0
            log = Path(tmp) / f"stderr-{run}.txt"
            with log.open("w") as errlog:
                times = asyncio.run(first_call(store, errlog))
            said = re.search(r"model ready in ([0-9.]+) s", log.read_text())
            ready += [float(said.group(1))] if said else []
            print(
                f"run {run + 1}{f' (cold: {evicted} files evicted)' if args.cold else ''}: "
                f"handshake {times['handshake']:.2f} s, search call {times['call']:.2f} s, "
                f"spawn → answer {times['answer']:.2f} s, by meaning {times['by meaning']}, "
                f"model ready in {said.group(1) if said else '?'} s"
            )
        if ready:
            median = statistics.median(ready)
            print(f"warm-up (model ready in): median {median:.2f} s, max {max(ready):.2f} s")


if __name__ == "__main__":
    main()
