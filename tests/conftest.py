"""Fixtures shared by unit and integration tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    """A path for a store that does not exist yet."""
    return tmp_path / "store"


@pytest.fixture(autouse=True)
def _no_ambient_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Never let a test touch the developer's real store: REMEM_HOME points into tmp_path."""
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "ambient-home"))
    monkeypatch.delenv("REMEM_DEBUG", raising=False)
