"""A local store under ``auto`` that outgrows its exact index (issue 32): the writes that take it
across the size where ``auto`` builds HNSW (or a doubling of it) say so once on stderr; ``stats`` and
``doctor`` say it every time; stdout (``--json``) never carries it; a store asked to be exact, or
already HNSW, hears nothing. The size is lowered to 4 here: no test adds 50,000 memories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_cli
from remem.backends.local import settings

SIZE = 4
ADVICE = "`auto` builds an HNSW index, but only at a reindex"


@pytest.fixture(autouse=True)
def _small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings, "AUTO_HNSW_THRESHOLD", SIZE)


def _add(store: Path, n: int, *options: str) -> tuple[str, str]:
    """``remem add`` memory number ``n``: (stdout, stderr)."""
    done = run_cli(["add", *options, f"memory number {n}"], store)
    assert done.code == 0, done.stderr
    return done.stdout, done.stderr


def _told(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ADVICE in line]


def test_writes_say_it_when_they_cross_the_size_and_its_doublings(store_dir: Path) -> None:
    heard = {n: _told(_add(store_dir, n)[1]) for n in range(1, 2 * SIZE + 2)}
    assert [n for n, lines in heard.items() if lines] == [SIZE, 2 * SIZE]  # not at every add past it
    assert heard[SIZE] == [
        f"The store holds {SIZE} vectors: from {SIZE} up `auto` builds an HNSW index, but only at a "
        "reindex, so every search still reads every vector; `remem reindex` builds it (minutes on a "
        "big store; writes wait meanwhile)."
    ]
    assert heard[2 * SIZE][0].startswith(f"The store holds {2 * SIZE} vectors")


def test_a_batch_across_several_marks_says_it_once(store_dir: Path) -> None:
    lines = "".join(f"line {n}\n" for n in range(3 * SIZE))
    done = run_cli(["add", "--lines", "-", "--json"], store_dir, stdin=lines)
    assert done.code == 0 and len(_told(done.stderr)) == 1
    assert ADVICE not in done.stdout
    json.loads(done.stdout)  # the report stays one JSON object


def test_json_stdout_stays_clean_and_quiet_silences_it(store_dir: Path) -> None:
    for n in range(1, SIZE):
        _add(store_dir, n)
    stdout, stderr = _add(store_dir, SIZE, "--json")
    assert _told(stderr) and json.loads(stdout) == {
        "id": SIZE,
        "duplicate": False,
        "supersedes": None,
        "current_again": False,
        "superseded": [],
        "similar": [],
    }
    quiet = run_cli(["--quiet", "stats"], store_dir)
    assert quiet.code == 0 and quiet.stderr == ""


def test_stats_and_doctor_say_it_every_time_on_stderr(store_dir: Path) -> None:
    for n in range(1, SIZE + 2):
        _add(store_dir, n)
    for args in (["stats"], ["stats", "--json"], ["doctor"], ["doctor", "--json"]):
        done = run_cli(args, store_dir)
        assert done.code == 0, done.stderr
        assert len(_told(done.stderr)) == 1 and ADVICE not in done.stdout
    assert json.loads(run_cli(["stats", "--json"], store_dir).stdout)["index"] == "exact (0 tombstones)"
    for line in run_cli(["doctor", "--json"], store_dir).stdout.splitlines():
        assert set(json.loads(line)) == {"check", "ok", "detail"}


def test_a_reindex_builds_hnsw_and_the_advice_stops(store_dir: Path) -> None:
    for n in range(1, SIZE + 1):
        _add(store_dir, n)
    reindexed = run_cli(["reindex"], store_dir)
    assert reindexed.code == 0 and "hnsw index rebuilt" in reindexed.stderr
    for n in range(SIZE + 1, 2 * SIZE + 1):  # across the doubling too
        assert _told(_add(store_dir, n)[1]) == []
    assert _told(run_cli(["stats"], store_dir).stderr) == []
    assert _told(run_cli(["doctor"], store_dir).stderr) == []


def test_a_store_asked_to_be_exact_hears_nothing(store_dir: Path) -> None:
    _add(store_dir, 1)
    assert run_cli(["reindex", "--index", "exact"], store_dir).code == 0
    for n in range(2, 2 * SIZE + 1):
        assert _told(_add(store_dir, n)[1]) == []
    assert _told(run_cli(["stats"], store_dir).stderr) == []
    assert _told(run_cli(["doctor"], store_dir).stderr) == []
