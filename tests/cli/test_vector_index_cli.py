"""The vector index from the command line (issue 15 #1, #12): HNSW settings out of bounds are
refused before anything is saved, and an index file that cannot be written after the commit is a
warning, caught up later."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ef-search", "1099511627776"], "--ef-search must be at least 2 and at most 65536"),
        (["--hnsw-m", "100000000"], "--hnsw-m must be at least 2 and at most 128"),
        (["--hnsw-m", "0"], "--hnsw-m must be at least 2"),
        (["--ef-search", "0"], "--ef-search must be at least 2"),
        (["--ef-construction", "5000"], "--ef-construction must be at least 2 and at most 4096"),
    ],
)
def test_hnsw_settings_out_of_bounds_are_refused_before_anything_is_saved(
    small: Path, args: list[str], message: str
) -> None:
    before = run_cli(["stats", "--json"], small).stdout
    result = run_cli(["reindex", "--index", "hnsw", *args], small)
    assert result.code == 2 and message in result.stderr and result.stderr.count("\n") == 1
    assert run_cli(["stats", "--json"], small).stdout == before  # index setting unchanged
    assert run_cli(["search", "leaking sink"], small).code == 0
    assert run_cli(["doctor"], small).code == 0


def test_a_failed_index_save_after_the_commit_is_a_warning_not_a_failure(small: Path) -> None:
    """Issue 15 #1: SQLite (the truth) committed the change, so the command reports what it did and
    exits 0; the unwritable index file is a warning and is caught up later."""
    (small / "vectors.faiss").unlink()
    (small / "vectors.faiss").mkdir()  # stands for a full disk: the file cannot be written
    added = run_cli(["add", "the cellar door creaks"], small)
    assert (added.code, added.stdout) == (0, "4\n")
    assert "Warning: cannot write" in added.stderr and "the change is saved" in added.stderr
    assert run_cli(["edit", "1", "the kitchen sink is fixed"], small).code == 0
    assert run_cli(["forget", "2"], small).code == 0
    texts = [json.loads(line)["text"] for line in run_cli(["export"], small).stdout.splitlines()]
    assert texts == ["the kitchen sink is fixed", "the attic window sticks", "the cellar door creaks"]
    assert json.loads(run_cli(["search", "--json", "-k", "1", "cellar door"], small).stdout)["id"] == 4
    (small / "vectors.faiss").rmdir()
    assert run_cli(["doctor", "--repair"], small).code == 0
    assert run_cli(["doctor"], small).code == 0
