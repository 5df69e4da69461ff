"""Every benchmark in bench/ runs its ``--quick`` mode to the end and prints a table, so none can rot.

Each runs as a user runs it, ``python bench/NAME.py --quick`` in a fresh process (the checkout's
``src`` first on PYTHONPATH, as for the rest of the suite). The quality benchmarks get a tiny data
set written here in their data's layout (the real SciFact and LoCoMo are not in the repository);
``serve.py``'s load runs on the session's PostgreSQL server. Nothing is timed: the figures are the
benchmarks' business (docs/performance.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
#: Every script in bench/ except the shared harness; a new benchmark is run here without being listed.
SCRIPTS = sorted(path.stem for path in BENCH.glob("*.py") if not path.stem.startswith("_"))

pytestmark = pytest.mark.slow


def scifact_like(folder: Path) -> Path:
    """A BEIR-layout corpus of 12 documents and 3 test queries (corpus.jsonl, queries, qrels)."""
    folder.mkdir()
    topics = ["vitamin D and bone density", "insulin resistance in mice", "measles vaccine uptake"]
    docs = [
        {"_id": f"d{n}", "title": f"Study {n}", "text": f"A trial of {topics[n % 3]}, cohort {n}."}
        for n in range(12)
    ]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(doc) for doc in docs) + "\n")
    queries = [{"_id": f"q{n}", "text": f"what is known about {topic}"} for n, topic in enumerate(topics)]
    (folder / "queries_test.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    (folder / "qrels").mkdir()
    lines = ["query-id\tcorpus-id\tscore", *(f"q{n}\td{n}\t1" for n in range(3))]
    (folder / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return folder


def locomo_like(folder: Path) -> Path:
    """One LoCoMo-layout conversation: two sessions of two turns, two questions with evidence."""
    folder.mkdir()
    session = lambda n, said: [  # noqa: E731
        {"speaker": who, "dia_id": f"D{n}:{i + 1}", "text": text} for i, (who, text) in enumerate(said)
    ]
    conversation = {
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": session(1, [("Ana", "I adopted a cat named Miso."), ("Ben", "Lovely, what colour?")]),
        "session_2_date_time": "10:02 am on 20 May, 2023",
        "session_2": session(2, [("Ana", "I started pottery classes."), ("Ben", "Which studio?")]),
    }
    qa = [
        {"question": "What is the name of Ana's cat?", "evidence": ["D1:1"], "category": 4},
        {"question": "What hobby did Ana take up?", "evidence": ["D2:1"], "category": 4},
    ]
    (folder / "c1.json").write_text(json.dumps({**conversation, "qa": qa}))
    return folder


def arguments(name: str, tmp_path: Path, postgres: str | None) -> list[str] | None:
    """The extra arguments of one benchmark's quick run (None: it cannot run on this machine)."""
    if name == "beir":
        return ["--data", str(scifact_like(tmp_path / "scifact")), "--mode", "hybrid"]
    if name == "locomo":
        return ["--data", str(locomo_like(tmp_path / "locomo"))]
    if name == "calibrate":
        return [
            "--scifact",
            str(scifact_like(tmp_path / "scifact")),
            "--locomo",
            str(locomo_like(tmp_path / "locomo")),
        ]
    if name in ("embed", "embed_multilingual"):
        return ["--scifact", str(tmp_path / "no-scifact")]  # generated documents instead
    if name == "serve":
        return ["--postgres", postgres] if postgres else None
    return []


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_benchmark_runs_quick_and_prints_a_table(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """``python bench/NAME.py --quick`` exits 0, names the machine first and prints a table."""
    if name == "embed_multilingual":
        import remem

        if remem.model_catalog().describe_one("multilingual-e5-small")["state"] != "installed":
            pytest.skip("multilingual-e5-small is not installed (remem model pull multilingual-e5-small)")
    postgres = request.getfixturevalue("postgres_base") if name == "serve" else None
    extra = arguments(name, tmp_path, postgres)
    assert extra is not None
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), "--quick", *extra],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines and "CPUs, load average" in lines[0], done.stdout[:500]
    assert any(line.startswith("| ") for line in lines), done.stdout[-2000:]
