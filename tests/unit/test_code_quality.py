"""The ground rules that tools can check: ruff clean, mypy strict, small modules."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "remem"


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", tool, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_ruff_is_clean() -> None:
    result = _run("ruff", "check", "src", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_passes() -> None:
    pytest.importorskip("mypy")
    result = _run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_modules_stay_small() -> None:
    sizes = {path.relative_to(ROOT): len(path.read_text().splitlines()) for path in SOURCE.rglob("*.py")}
    assert sizes and max(sizes.values()) <= 330, sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
