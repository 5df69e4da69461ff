"""Tests that need a real PostgreSQL with pgvector (see ``tests/postgres_server.py``): the CLI and
API on a ``postgresql://`` store, moving stores between back-ends, server failures. Real processes
writing at once, and killed, are in tests/integration, on both back-ends. In-process CLI runs here
embed with the fake embedder."""

from __future__ import annotations

import pytest

import helpers
from remem.testing import FakeEmbedder


@pytest.fixture(autouse=True)
def _fake_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every in-process CLI run in this folder embeds with a FakeEmbedder."""
    monkeypatch.setitem(helpers.CLI, "embedder", FakeEmbedder())
