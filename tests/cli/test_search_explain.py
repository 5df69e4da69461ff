"""Saying why (issue 48 #3): --explain shows each hit's lanes and lifts; a search or list that
finds nothing says why in one line on stderr; an identifier no memory holds is said beside the
hits found near it by meaning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dated_store as day
import remem
from helpers import run_cli
from remem.testing import FakeEmbedder


@pytest.fixture
def store(store_dir: Path) -> Path:
    lines = [
        {
            "text": "Rolled back deploy 9f3c2ab1d4e5 after the importer failed with E1045.",
            "tags": ["incident"],
        },
        {"text": day.FRIDAY_LUNCH, "created_at": day.last("friday").isoformat()},
        {"text": day.TUESDAY_LUNCH, "created_at": day.last("tuesday").isoformat()},
    ]
    assert (
        run_cli(["add", "--jsonl", "-"], store_dir, stdin="".join(json.dumps(x) + "\n" for x in lines)).code
        == 0
    )
    return store_dir


def test_explain_shows_each_lanes_rank_and_score_and_every_lift(store: Path) -> None:
    out = run_cli(["search", "--json", "--explain", "what did we order for lunch on Friday"], store)
    hits = [json.loads(line) for line in out.stdout.splitlines()]
    assert hits[0]["text"] == day.FRIDAY_LUNCH
    explain = hits[0]["explain"]
    assert (
        explain["vector"] == hits[0]["lanes"]["vector"] and explain["keyword"] == hits[0]["lanes"]["keyword"]
    )
    assert explain["lifts"] == [{"name": "time", "size": 1.0}]
    assert all(not hit["explain"]["lifts"] for hit in hits[1:])
    calibrated = explain["calibration"]  # the score it ranked by, in each lane's units, and the shown one
    assert calibrated["relevance"] == hits[0]["score"] and 0 < hits[0]["score"] < 1
    assert calibrated["ranking"] > hits[1]["explain"]["calibration"]["ranking"]
    table = run_cli(["search", "--explain", "what did we order for lunch on Friday"], store)
    first = next(line for line in table.stdout.splitlines() if line.startswith(f"{hits[0]['id']}: "))
    assert "vector #" in first and "cosine" in first and "time +1.0000; ranking " in first
    assert first.endswith(f"-> relevance {hits[0]['score']:.4f}")
    plain = run_cli(["search", "--json", "what did we order for lunch on Friday"], store)
    assert "explain" not in json.loads(plain.stdout.splitlines()[0])


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["search", "--mode", "keyword", "E1046"], "no memory holds 'E1046'"),
        (["search", '"failed with E1046"'], 'no memory holds the phrase "failed with e1046"'),
        (["search", "--tag", "nosuchtag", "deploy"], "the filter --tag nosuchtag selects no memory"),
        (["list", "--tag", "nosuchtag"], "the filter --tag nosuchtag selects no memory"),
        (
            ["list", "--tag", "incident", "--user", "bob"],
            "the filters --user bob --tag incident select no memory",
        ),
        (["search", "--mode", "vector", "--min-score", "0.99", "deploy"], "below --min-score 0.99"),
    ],
)
def test_finding_nothing_says_why_in_one_line(store: Path, args: list[str], said: str) -> None:
    out = run_cli(args, store)
    assert out.code == 1 and out.stdout == ""
    assert said in out.stderr and out.stderr.count("\n") == 1


def test_an_identifier_no_memory_holds_is_said_beside_the_hits_near_it(store: Path) -> None:
    out = run_cli(["search", "E1046"], store)
    assert out.code == 0 and "E1045" in out.stdout  # the nearest by meaning, still shown
    assert "No memory holds 'E1046': these hits are only near it by meaning." in out.stderr
    held = run_cli(["search", "E1045"], store)
    assert held.code == 0 and "No memory holds" not in held.stderr


def test_a_store_without_vectors_says_so_outside_keyword_mode(store_dir: Path) -> None:
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        memories.add("The deploy went out.", embed=False)
    out = run_cli(["search", "deploy"], store_dir)
    assert (
        out.code == 1 and "no memory has a vector yet: keyword mode finds them by their words" in out.stderr
    )
    assert run_cli(["search", "--mode", "keyword", "deploy"], store_dir).code == 0
