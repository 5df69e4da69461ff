"""SCORE on the command line (issue 48 #2): a calibrated relevance in [0, 1], the same scale in every
mode, with the raw cosine in its own column; --min-score filters that scale in every mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_cli

KEY = "bob rotates the deploy key every ninety days"


@pytest.fixture
def store(store_dir: Path) -> Path:
    """Two memories of bob's, twenty of the team's (no user)."""
    lines = [{"text": KEY, "user": "bob"}, {"text": "bob likes green tea in the morning", "user": "bob"}]
    lines += [{"text": f"team note {i}: the weekly review of topic number {i} went fine"} for i in range(20)]
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    assert run_cli(["add", "--jsonl", "-"], store_dir, stdin=stdin).code == 0
    return store_dir


def _hits(store: Path, *args: str) -> list[dict[str, object]]:
    result = run_cli(["search", "--json", *args], store)
    assert result.code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_the_same_memory_scores_alike_with_and_without_the_teams_memories(store: Path) -> None:
    """Before: 1.0000 with -u bob (a pool of two: z-scores ±1) and 4.1430 with -u bob --shared."""
    alone = _hits(store, "-u", "bob", "deploy key rotation")
    among = _hits(store, "-u", "bob", "--shared", "deploy key rotation")
    assert alone[0]["text"] == among[0]["text"] == KEY
    assert abs(float(alone[0]["score"]) - float(among[0]["score"])) < 0.02  # type: ignore[arg-type]
    assert all(0.0 <= float(h["score"]) <= 1.0 for h in [*alone, *among])  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_min_score_keeps_the_hits_scoring_at_least_it_in_every_mode(store: Path, mode: str) -> None:
    everything = _hits(store, "--mode", mode, "-k", "30", KEY)
    kept = _hits(store, "--mode", mode, "-k", "30", "--min-score", "0.5", KEY)  # keyword: refused before
    assert kept and [h["id"] for h in kept] == [h["id"] for h in everything if float(h["score"]) >= 0.5]  # type: ignore[arg-type]
    assert kept[0]["text"] == KEY


def test_the_table_shows_the_score_and_the_raw_cosine_beside_it(store: Path) -> None:
    table = run_cli(["search", "--mode", "vector", KEY], store).stdout.splitlines()
    assert table[0].split()[:3] == ["ID", "SCORE", "COSINE"]
    score, cosine = (float(cell) for cell in table[1].split()[1:3])
    assert cosine == pytest.approx(1.0, abs=1e-4) and 0.5 < score < 0.6  # a cosine of 1 is not sure
