"""The real CLI, run in-process through the same code path as `remem`, with the fake embedder: the
tests here are about commands, options, exit codes and files, not about what a real model ranks."""

from __future__ import annotations

import pytest

import helpers
from remem.testing import FakeEmbedder


@pytest.fixture(autouse=True)
def _fake_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every in-process CLI run in this folder embeds with a FakeEmbedder."""
    monkeypatch.setitem(helpers.CLI, "embedder", FakeEmbedder())
