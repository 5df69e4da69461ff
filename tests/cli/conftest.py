"""The real CLI, run in-process through the same code path as `remem`, with the fake embedder: the
tests here are about commands, options, exit codes and files, not about what a real model ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

import helpers
from remem.testing import FakeEmbedder


@pytest.fixture(autouse=True)
def _fake_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every in-process CLI run in this folder embeds with a FakeEmbedder."""
    monkeypatch.setitem(helpers.CLI, "embedder", FakeEmbedder())


@pytest.fixture
def small(store_dir: Path) -> Path:
    """A store of three short memories about a house."""
    for text in ("the kitchen sink leaks", "the garden gate squeaks", "the attic window sticks"):
        assert helpers.run_cli(["add", text], store_dir).code == 0
    return store_dir


@pytest.fixture
def two(store_dir: Path) -> Path:
    """A store of two memories, the second tagged ``t0``."""
    assert helpers.run_cli(["add", "the kitchen sink leaks"], store_dir).code == 0
    assert helpers.run_cli(["add", "--tag", "t0", "the garden gate squeaks"], store_dir).code == 0
    return store_dir
