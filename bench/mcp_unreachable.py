"""`remem mcp` on a PostgreSQL store whose server does not answer: how long its first calls take.

    python bench/mcp_unreachable.py [--calls 3]

A TCP port accepts connections and never answers (a hung server: libpq waits for its connect
timeout, 10 s). The server (in-process, the SDK's own client) answers tools/list, which starts the
warm-up connecting; then ``--calls`` memory_search calls are made at once. Each call's time to its
tool error is printed, and how many connections the port saw. Before issue 24 the warm-up held the
lock while connecting and each call then connected in turn (10 s, 20 s, 30 s…); now calls made
while an attempt is under way share its outcome.
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from pathlib import Path

import anyio
from mcp import Client

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "mcp"))

from mcp_support import server

from remem.mcp import service


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3)
    calls = parser.parse_args().calls
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def hold() -> None:
        while True:
            held.append(listener.accept()[0])

    threading.Thread(target=hold, daemon=True).start()
    service.STORE_RETRY_SECONDS = 3600.0  # the warm-up's next try is not measured
    url = f"postgresql://remem@127.0.0.1:{listener.getsockname()[1]}/db?sslmode=disable"
    app = server(url, warm_up=True)  # type: ignore[arg-type]
    times: list[float] = []

    async def search(client: Client, started: float) -> None:
        result = await client.call_tool("memory_search", {"query": "deploy key"})
        assert result.is_error
        times.append(time.perf_counter() - started)

    async def scenario() -> None:
        async with Client(app) as client:
            await client.list_tools()
            await anyio.sleep(0.2)  # the warm-up is connecting
            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for _ in range(calls):
                    group.start_soon(search, client, started)

    anyio.run(scenario)
    print(
        f"{calls} calls at once: errors after {', '.join(f'{t:.1f} s' for t in sorted(times))}; "
        f"{len(held)} connections"
    )


if __name__ == "__main__":
    main()
