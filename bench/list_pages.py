"""What one memory_list page costs at depth, where every memory shares one created_at (a bulk
ingest's batch): each depth against the first page, measured in the same run.

    python bench/list_pages.py [--memories 200000] [--depths 0,10000,100000,190000] [--runs 3]
                               [--postgres URL] [--postgres-memories 200000] [--before OLD/src] [--quick]

The store (every memory alice's) is built with the fake embedder, each page read through the MCP
server's ``memory_list`` tool with the SDK's own client (a cursor for depth d names the memory d
deep, as the tool's own cursors do). A made-up cursor (that time, id 1) is read too. Each twice: by
a server pinned to no user (``admin``) and by one pinned to alice, who also sees the shared memories
(``alice+shared``: what a token of hers gives). The baseline is the first page (depth 0) of the same
server. With ``--postgres URL`` the same on a PostgreSQL store too; with ``--before SRC`` (another
checkout's ``src``) the store is built by that code and the pages are read by it as well, in a child
process of the same run.
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

import _harness

BATCH = "2026-05-01T12:00:00.000Z"
LIMIT = 20


def cursor(memory_id: int) -> str:
    """A cursor as memory_list writes it: [created_at, id] of the page's last memory."""
    raw = json.dumps([BATCH, memory_id], separators=(",", ":")).encode()
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
    wanted = {f"depth {d}": cursor(count - d + 1) if d else None for d in depths}
    wanted["made-up (time, id 1)"] = cursor(1)
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


def compare(label: str, store: str, count: int, depths: list[int], args: argparse.Namespace) -> None:
    """Build the store (with ``--before``'s code when given), read the pages, print the rows."""
    spec = ["--store", store, "--memories", str(count), "--depths", ",".join(map(str, depths))]
    start = time.perf_counter()
    if args.before:
        child(args.before, "--build", *spec)
    else:
        build(store, count)
    took = time.perf_counter() - start
    _harness.note(f"{label}: built {count} memories sharing one created_at in {took:.0f} s")
    old = json.loads(child(args.before, "--measure", "--runs", str(args.runs), *spec)) if args.before else {}
    new = measure(store, count, depths, args.runs)
    for name, took in new.items():
        pin = name[:13]  # measure's names: the pin padded to 13, a space, the page
        base = new.get(f"{pin} depth 0", took)
        before = f"{old[name] * 1000:.1f} | " if old else ""
        print(f"| {label} | {name} | {before}{took * 1000:.1f} | {_harness.times(took, base)} |", flush=True)


def main() -> None:
    """Parse, then build/measure (a child of ``--before``) or measure and print the table."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--before", help="another checkout's src: its code builds and reads too")
    parser.add_argument("--memories", type=int, help="default 200,000; 3,000 quick")
    parser.add_argument("--depths", help="default 0,10000,100000,190000; 0,1000,2900 quick")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--postgres", metavar="URL", help="also on a PostgreSQL store on this server")
    parser.add_argument("--postgres-memories", type=int, help="default 200,000; 3,000 quick")
    parser.add_argument("--postgres-depths", help="default 0,10000,100000; 0,1000,2900 quick")
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--build", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    quick = args.quick
    count = args.memories or (3000 if quick else 200_000)
    depths = _harness.int_list(args.depths or ("0,1000,2900" if quick else "0,10000,100000,190000"))
    if args.build:
        build(args.store, count)
        return
    if args.measure:
        print(json.dumps(measure(args.store, count, depths, args.runs)))
        return
    print(_harness.machine())
    print(f"\n| store | pin, page | {'before ms | ' if args.before else ''}ms | × the first page |")
    print(f"|---|---|{'---:|' if args.before else ''}---:|---:|")
    with tempfile.TemporaryDirectory() as scratch:
        compare("local", str(Path(scratch) / "store"), count, depths, args)
        if args.postgres:
            pg_count = args.postgres_memories or (3000 if quick else 200_000)
            pg_depths = _harness.int_list(
                args.postgres_depths or ("0,1000,2900" if quick else "0,10000,100000")
            )
            url = _harness.with_schema(args.postgres, "pages")
            compare("postgres", url, pg_count, pg_depths, args)


if __name__ == "__main__":
    main()
