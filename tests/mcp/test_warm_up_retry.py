"""The server's warm-up and a failure that passes: descriptors ran out while it loaded the model
(EMFILE, here from a test double of the embedder: tests/integration/test_serve_connections.py runs
a real server out of descriptors). It used to give up for good ("unexpected OSError") and leave the
server on keyword search; now it says so once and tries again, and vector search comes back. A
failure that would fail again (a model file failing its check) is reported once, not retried."""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Sequence
from pathlib import Path

from mcp import Client
from mcp_support import call, run

from remem.embedders.base import Embeddings
from remem.errors import EmbedderError
from remem.mcp.server import build_server
from remem.testing import FakeEmbedder


class _FailsFirst(FakeEmbedder):
    """Its first ``failures`` loads (``embed_queries``) raise ``error``; then it works."""

    def __init__(self, error: Exception, failures: int = 1) -> None:
        super().__init__()
        self.error, self.failures, self.loads = error, failures, 0

    def embed_queries(self, texts: Sequence[str]) -> Embeddings:
        self.loads += 1
        if self.loads <= self.failures:
            raise self.error
        return super().embed_queries(texts)


def test_a_warm_up_out_of_descriptors_tries_again_and_vector_search_comes_back(store_dir: Path) -> None:
    notes: list[str] = []
    embedder = _FailsFirst(OSError(errno.EMFILE, os.strerror(errno.EMFILE)))
    app = build_server(store_dir, embedder=embedder, note=notes.append, warm_up=False)

    async def scenario() -> None:
        async with Client(app) as client:
            await call(client, "memory_add", {"text": "the deploy key rotates every 90 days"})
            started = time.monotonic()
            app.service.warm_up()  # fails once, then tries again after a short pause
            assert time.monotonic() - started < 10 and embedder.loads == 3  # failed, then the two warm-ups
            assert app.service.ready and app.service.failure is None, notes
            found = await call(
                client, "memory_search", {"query": "rotating the deploy key", "mode": "vector"}
            )
            assert found["lane_note"] is None and [hit["id"] for hit in found["hits"]] == [1]

    run(scenario)
    assert [note for note in notes if "failed for now (" in note and "Too many open files" in note], notes
    assert [note for note in notes if "model ready" in note], notes


def test_a_failure_that_would_fail_again_is_reported_once(store_dir: Path) -> None:
    notes: list[str] = []
    embedder = _FailsFirst(EmbedderError("the model file fails its sha256 check"), failures=5)
    app = build_server(store_dir, embedder=embedder, note=notes.append, warm_up=False)
    app.service.warm_up()
    assert embedder.loads == 1 and not app.service.ready
    assert app.service.failure == "the model file fails its sha256 check"
    assert len([note for note in notes if "sha256" in note]) == 1, notes
