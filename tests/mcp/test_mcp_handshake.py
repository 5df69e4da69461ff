"""The handshake never waits for the model: with the model's load held back, a client still gets
its handshake, the tool list and a stored add, through the SDK's own client; the warm-up begins
once the server has answered, and the server is ready as soon as the load is let go. (How long the
real handshake takes over stdio is printed by tests/mcp/test_mcp_stdio.py, not bounded: a bound
on wall time fails on a busy machine without telling anything.)"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

from mcp import Client
from mcp_support import FIRST_STORED_PENDING, call, run

from remem.embedders.base import Embeddings
from remem.mcp.server import build_server
from remem.testing import FakeEmbedder


class _HeldBack(FakeEmbedder):
    """Its first load (``embed_queries``) waits until ``let_go`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.let_go, self.loading = threading.Event(), threading.Event()

    def embed_queries(self, texts: Sequence[str]) -> Embeddings:
        self.loading.set()
        assert self.let_go.wait(60), "the test never let the load go"
        return super().embed_queries(texts)


def test_the_handshake_tools_and_an_add_are_answered_while_the_model_loads(store_dir: Path) -> None:
    embedder = _HeldBack()
    app = build_server(store_dir, embedder=embedder, warm_up=True)

    async def scenario() -> None:
        try:
            async with Client(app) as client:
                tools = await client.list_tools()
                assert len(tools.tools) == 7 and not app.service.ready
                assert embedder.loading.wait(30)  # the warm-up began once the server had answered
                added = await call(client, "memory_add", {"text": "staging runs on the small box"})
                assert added == FIRST_STORED_PENDING and not app.service.ready
                embedder.let_go.set()
                deadline = time.monotonic() + 30
                while not app.service.ready and time.monotonic() < deadline:
                    time.sleep(0.01)
                assert app.service.ready
        finally:
            embedder.let_go.set()

    run(scenario)
