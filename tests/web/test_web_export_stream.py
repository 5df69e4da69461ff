"""The page's export is streamed: a store of any size goes out a chunk at a time, so the memory the
server uses while sending it stays bounded (here: a 12 MB export with under 4 MB held at its peak,
where building it whole held more than twice the export), it is what `remem export` writes, and a
browser that goes away stops the reading, even before the response starts."""

from __future__ import annotations

import json
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from web_support import csrf, memories

from remem import Filters, NewMemory
from remem.mcp.server import build_server
from remem.testing import FakeEmbedder
from remem.web.exporting import export_body
from serve_support import serving

TEXT_CHARS = 20_000
COUNT = 600


@pytest.fixture
def big_store(store_dir: Path) -> tuple[Path, str]:
    """A store of ``COUNT`` memories of ``TEXT_CHARS`` characters each (12 MB of text), and an
    admin token's secret."""
    with memories(store_dir) as m:
        m.add_many(
            (NewMemory(f"{n:05d} " + "lorem ipsum dolor " * (TEXT_CHARS // 18)) for n in range(COUNT)),
            expected=COUNT,
        )
        return store_dir, m.tokens.add(user=None)[0]


@contextmanager
def signed_in(store: Path, secret: str) -> Iterator[httpx2.Client]:
    """A browser signed in to a real `remem serve` of ``store`` (uvicorn on a thread, real HTTP)."""
    with (
        serving(store) as server,
        httpx2.Client(base_url=server.url.removesuffix("/mcp"), timeout=60) as browser,
    ):
        browser.post("/signin", data={"csrf": csrf(browser.get("/signin").text), "token": secret})
        assert "remem_session" in browser.cookies
        yield browser


def test_a_large_export_is_sent_in_chunks_with_bounded_memory(big_store: tuple[Path, str]) -> None:
    store, secret = big_store
    with signed_in(store, secret) as browser:
        sent = chunks = 0
        tracemalloc.start()
        try:
            with browser.stream("GET", "/export.jsonl") as answer:
                assert answer.status_code == 200
                assert answer.headers["content-type"].startswith("application/x-ndjson")
                for chunk in answer.iter_bytes():
                    sent, chunks = sent + len(chunk), chunks + 1
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert sent > COUNT * TEXT_CHARS and chunks > 10
    assert peak < 4 * 2**20, f"{peak / 2**20:.1f} MB held while sending {sent / 2**20:.1f} MB"
    with memories(store) as m:
        expected = b"".join((json.dumps(r, ensure_ascii=False) + "\n").encode() for r in m.export())
    assert sent == len(expected)


def _reading() -> bool:
    return any(thread.name == "remem-page-export" for thread in threading.enumerate())


def test_a_browser_that_goes_away_stops_the_reading(
    big_store: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, secret = big_store
    monkeypatch.setattr("remem.web.exporting.CHUNK_BYTES", 1 << 12)  # many chunks: a long stream
    with signed_in(store, secret) as browser:
        with browser.stream("GET", "/export.jsonl") as answer:
            first = next(answer.iter_bytes())
            assert json.loads(first.split(b"\n")[0])["id"] == 1
            assert _reading(), "the export was read whole before its first bytes were sent"
        _stopped_reading(within=30)


def _stopped_reading(within: float) -> None:
    deadline = time.monotonic() + within
    while _reading():
        assert time.monotonic() < deadline, "the export's reader kept reading"
        time.sleep(0.05)


def test_an_export_whose_response_never_starts_stops_its_reader(
    big_store: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The browser gone between the export's first chunk and the response's first byte: the body is
    dropped unstarted (its own ``finally`` never runs), and the reader, which holds a snapshot of the
    store, stops all the same."""
    store, _ = big_store
    monkeypatch.setattr("remem.web.exporting.CHUNK_BYTES", 1 << 12)  # the reader fills its queue and waits
    service = build_server(store, embedder=FakeEmbedder(), warm_up=False, create=False).service
    body = anyio.run(export_body, service, Filters())
    assert _reading()
    del body  # what a response cancelled before its first send leaves behind
    _stopped_reading(within=10)
