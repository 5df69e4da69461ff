"""The page's search (``GET /search`` of ``remem serve``, rendered HTML) beside the MCP tool's
(``tools/call memory_search``, JSON), on one server, one store, one token, in the same run; and the
MCP tool on a server with the page mounted beside one without it (the baseline), idle and while a
browser loads the page's views.

    python bench/page.py [--size 10000] [--calls 300] [--model] [--quick]

A local store of ``--size`` memory-shaped texts, all the token's user's, built with the fake embedder
(the server's cost measured, not the model's) unless ``--model`` (the bundled model: embedding 10,000
texts takes minutes). ``remem serve`` runs in this process (uvicorn on a thread, 127.0.0.1, a free
port); each search goes over one kept-alive HTTP connection per route: the MCP tool as one raw
JSON-RPC POST with the bearer token (the baseline), the page as a GET with the session cookie
signed in once through its form. Both ask for the same 20 hits of the same queries, interleaved
(MCP, page, MCP, page, ...) after an untimed warm-up pass.

The second table runs two servers of the same store in this process, one built without the page
(``HttpServer(..., page=False)``), and calls the MCP tool on each in turn (each query on both, the
one that goes first alternating) after a warm-up pass: first with nothing else running, then while
a thread signed in to the page of the server that has it loads ``/recent``, ``/`` and ``/search``
one after another (every server here shares this process and its cores, so that browsing slows
both; what it shows is whether it slows the server that serves it more). Never asserts times: it
prints them.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import _harness
import remem
from remem.mcp.http import HttpServer, Listener
from remem.mcp.server import build_server
from remem.testing import FakeEmbedder

HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}
#: Hits per search: the page shows 20.
K = 20


def main() -> None:
    """Build the store, serve it, time both routes, print the table."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--model", action="store_true", help="the bundled model, not the fake embedder")
    args = parser.parse_args()
    size, calls = (500, 40) if args.quick else (args.size, args.calls)
    print(_harness.machine())
    with tempfile.TemporaryDirectory() as scratch:
        store = Path(scratch) / "store"
        _harness.note(f"building a store of {size} memories")
        _harness.build_store(store, size, fake=not args.model)
        embedder = None if args.model else FakeEmbedder()
        with remem.open(store, embedder=embedder) as memories:
            secret = memories.tokens.add(user="bench")[0]
        queries = [text.split(" (note")[0] for text in _harness.memory_texts(calls, seed=7)]
        with serving(store, embedder) as with_page, serving(store, embedder, page=False) as without:
            rows = measure(with_page, secret, queries)
            mounted = measure_mounted(without, with_page, secret, queries)
    mcp = _harness.percentile(rows["MCP memory_search"], 0.5)
    _harness.table(
        ["route", "calls", "p50 ms", "p95 ms", "p50 − MCP p50 ms"],
        [
            [name, len(seconds), f"{_harness.percentile(seconds, 0.5):.1f}",
             f"{_harness.percentile(seconds, 0.95):.1f}", f"{_harness.percentile(seconds, 0.5) - mcp:+.1f}"]
            for name, seconds in rows.items()
        ],
        title=f"Search of a {size}-memory store, k={K}, {'bundled model' if args.model else 'fake embedder'}",
    )  # fmt: skip
    baselines = {phase: _harness.percentile(mounted[f"not mounted{phase}"], 0.5) for phase in ("", BROWSED)}
    _harness.table(
        ["MCP memory_search on a server", "calls", "p50 ms", "p95 ms", "p50 − not mounted ms"],
        [
            [name, len(seconds), f"{_harness.percentile(seconds, 0.5):.1f}",
             f"{_harness.percentile(seconds, 0.95):.1f}",
             f"{_harness.percentile(seconds, 0.5) - baselines[BROWSED if BROWSED in name else '']:+.1f}"]
            for name, seconds in mounted.items()
        ],
        title=f"The MCP tool with the page not mounted (the baseline) and mounted, {size} memories, k={K}",
    )  # fmt: skip


#: The second phase's rows: while a browser loads the page's views.
BROWSED = ", page browsed"


@contextlib.contextmanager
def serving(store: Path, embedder: FakeEmbedder | None, *, page: bool = True) -> Iterator[str]:
    """``remem serve`` of ``store`` (with the page, or without) on a thread: its base URL."""
    app = build_server(store, embedder=embedder, create=False, name="remem serve")
    server = HttpServer(app, Listener(port=0), page=page)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        base = server.url.removesuffix("/mcp")
        wait_up(base)
        yield base
    finally:
        server.stop()
        thread.join(timeout=60)


def measure_mounted(without: str, with_page: str, secret: str, queries: list[str]) -> dict[str, list[float]]:
    """The MCP tool on the server ``without`` the page and on the one ``with_page``, in turn, after a
    warm-up pass; then again while a thread browses the page: milliseconds per call."""
    timings: dict[str, list[float]] = {}
    for phase in ("", BROWSED):
        clients = {f"not mounted{phase}": connect(without), f"mounted{phase}": connect(with_page)}
        timings.update({name: [] for name in clients})
        stop = threading.Event()
        browser = threading.Thread(target=browse, args=(with_page, secret, queries, stop), daemon=True)
        if phase:
            browser.start()
        try:
            for timed in (False, True):
                for number, query in enumerate(queries):
                    turn = list(clients.items())
                    for name, client in turn if number % 2 else reversed(turn):  # each goes first by turns
                        started = time.perf_counter()
                        mcp_search(client, secret, number, query)
                        if timed:
                            timings[name].append((time.perf_counter() - started) * 1000)
        finally:
            stop.set()
            if phase:
                browser.join(timeout=60)
    return timings


def browse(base: str, secret: str, queries: list[str], stop: threading.Event) -> None:
    """Load the page's views (what was remembered recently, the newest, a search), one after another,
    until ``stop``."""
    page = connect(base)
    cookie = sign_in(page, secret)
    number = 0
    while not stop.is_set():
        query = urllib.parse.urlencode({"q": queries[number % len(queries)]})
        for path in ("/recent", "/", f"/search?{query}"):
            page.request("GET", path, headers={"Cookie": cookie})
            answer = page.getresponse()
            answer.read()
            assert answer.status == 200, (path, answer.status)
        number += 1


def connect(base: str) -> http.client.HTTPConnection:
    """A kept-alive connection to the server at ``base``."""
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    return http.client.HTTPConnection(host, int(port))


def measure(base: str, secret: str, queries: list[str]) -> dict[str, list[float]]:
    """Each query through both routes, interleaved, after a warm-up pass: milliseconds per call."""
    mcp, page = connect(base), connect(base)
    cookie = sign_in(page, secret)
    timings: dict[str, list[float]] = {"MCP memory_search": [], "page GET /search": []}
    routes = {
        "MCP memory_search": lambda number, query: mcp_search(mcp, secret, number, query),
        "page GET /search": lambda number, query: page_search(page, cookie, query),
    }
    for timed in (False, True):
        for number, query in enumerate(queries):
            for name, call in routes.items():
                started = time.perf_counter()
                call(number, query)
                if timed:
                    timings[name].append((time.perf_counter() - started) * 1000)
    return timings


def wait_up(base: str) -> None:
    """Until ``/healthz`` answers."""
    for _ in range(600):
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=5):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{base} did not come up")


def sign_in(page: http.client.HTTPConnection, secret: str) -> str:
    """Sign in through the form: the session cookie (``name=value``)."""
    page.request("GET", "/signin")
    answer = page.getresponse()
    form = answer.read().decode()
    signin_cookie = answer.getheader("set-cookie", "").split(";")[0]
    csrf = re.search(r'name="csrf" value="([^"]+)"', form)
    assert csrf is not None, form[:500]
    body = urllib.parse.urlencode({"csrf": csrf.group(1), "token": secret})
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": signin_cookie}
    page.request("POST", "/signin", body=body, headers=headers)
    answer = page.getresponse()
    answer.read()
    cookies = [c.split(";")[0] for c in answer.headers.get_all("set-cookie") or []]
    session = [c for c in cookies if c.startswith("remem_session=")]
    assert answer.status == 303 and session, answer.status
    return session[0]


def mcp_search(mcp: http.client.HTTPConnection, secret: str, number: int, query: str) -> None:
    """One tools/call memory_search; it must succeed."""
    call = {"jsonrpc": "2.0", "id": number, "method": "tools/call",
            "params": {"name": "memory_search", "arguments": {"query": query, "k": K}}}  # fmt: skip
    mcp.request(
        "POST", "/mcp", body=json.dumps(call), headers={**HEADERS, "Authorization": f"Bearer {secret}"}
    )
    answer = mcp.getresponse()
    data = json.loads(answer.read())
    assert answer.status == 200 and not data["result"].get("isError"), data


def page_search(page: http.client.HTTPConnection, cookie: str, query: str) -> None:
    """One page search; it must succeed."""
    page.request("GET", "/search?" + urllib.parse.urlencode({"q": query}), headers={"Cookie": cookie})
    answer = page.getresponse()
    answer.read()
    assert answer.status == 200, answer.status


if __name__ == "__main__":
    main()
