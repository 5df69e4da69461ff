"""A big ingest's memory does not grow with the input (issue 46 #9h): a real ``remem add --lines``
process of 40,000 lines peaks where one of 3,000 does, give or take what the report's ids take.
The old move read the store through SQLite's memory map, so every page the move and the index
file's writing read stayed resident: +100 MiB here, 256 MiB at 200,000 memories."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from helpers import run_measured

#: The child: the real CLI, with a fake embedder of the bundled model's width (384 dimensions).
CHILD = """
import sys
from remem.cli import main
from remem.testing import FakeEmbedder
from remem.types import ModelInfo

model = ModelInfo(name="fake-384", dim=384, pooling="mean", sha256="f" * 64)
sys.exit(main(["-q", "add", "--lines", sys.argv[1], "--store", sys.argv[2]], embedder=FakeEmbedder(model)))
"""


def _lines(path: Path, count: int) -> Path:
    """``count`` distinct memory-sized lines in ``path``."""
    words = [f"w{n}" for n in range(5000)]
    rng = random.Random(count)
    path.write_text("".join(f"memory {n} {' '.join(rng.choices(words, k=20))}\n" for n in range(count)))
    return path


@pytest.mark.slow
def test_a_big_ingest_peaks_where_a_small_one_does(tmp_path: Path) -> None:
    small = run_measured(
        [sys.executable, "-c", CHILD, str(_lines(tmp_path / "small", 3000)), str(tmp_path / "a")]
    )
    big = run_measured(
        [sys.executable, "-c", CHILD, str(_lines(tmp_path / "big", 40_000)), str(tmp_path / "b")]
    )
    assert small.code == 0 and big.code == 0, (small.stderr, big.stderr)
    assert big.peak_mib < small.peak_mib + 40, (small.peak_mib, big.peak_mib)
