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
    """Never let a test touch the developer's real store or model cache, or the network.

    REMEM_HOME and REMEM_MODELS point into tmp_path; downloads go to a closed local port unless a
    test starts its own stand-in hub.
    """
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "ambient-home"))
    monkeypatch.setenv("REMEM_MODELS", str(tmp_path / "ambient-models"))
    monkeypatch.setenv("REMEM_HF_ENDPOINT", "http://127.0.0.1:9")
    for name in ("REMEM_DEBUG", "REMEM_MODEL_DIR"):
        monkeypatch.delenv(name, raising=False)
