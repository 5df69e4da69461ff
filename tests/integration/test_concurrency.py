"""Many writers, readers, reindexes and kill -9 at once, in real processes: nothing is lost."""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import run_cli

pytestmark = pytest.mark.slow  # real processes, kills or races (the slow tier)

WRITERS, ADDS_PER_WRITER = 8, 50


def _quiet_main(args: list[str]) -> tuple[int, str]:
    from remem.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue() if code in (0, 1) else err.getvalue()


def _writer(store: str, writer: int) -> list[tuple[int, str]]:
    added = []
    for i in range(ADDS_PER_WRITER):
        text = f"note w{writer}n{i}: writer {writer} wrote memory number {i} about topic {i % 7}"
        code, out = _quiet_main(["add", "--store", store, text])
        assert code == 0, (code, text, out)
        added.append((int(out.strip()), text))
    return added


def _reindexer(store: str, stop: multiprocessing.synchronize.Event, counts: multiprocessing.Queue) -> None:  # type: ignore[name-defined]
    runs, kinds = 0, ["exact", "hnsw", "auto"]
    while not stop.is_set():
        code, err = _quiet_main(["reindex", "--store", store, "--force", "--index", kinds[runs % 3]])
        assert code in (0, 1), (code, err)  # 1 only before the first memory exists
        runs += 1
    counts.put(("reindex", runs))


def _searcher(store: str, stop: multiprocessing.synchronize.Event, counts: multiprocessing.Queue) -> None:  # type: ignore[name-defined]
    runs, failures = 0, 0
    while not stop.is_set():
        mode = ["vector", "keyword", "hybrid"][runs % 3]
        code, out = _quiet_main(
            ["search", "--store", store, "--json", "--mode", mode, "writer memory topic 3"]
        )
        failures += code not in (0, 1) or any(not json.loads(line)["text"] for line in out.splitlines())
        runs += 1
    counts.put(("search", runs, failures))


def test_eight_writers_with_reindex_and_searches_lose_nothing(store_dir: Path) -> None:
    context = multiprocessing.get_context("spawn")
    stop, counts = context.Event(), context.Queue()
    targets = (_reindexer, _searcher)
    helpers = [context.Process(target=f, args=(str(store_dir), stop, counts), daemon=True) for f in targets]
    for process in helpers:
        process.start()
    try:
        with context.Pool(WRITERS) as pool:
            parts = pool.starmap(_writer, [(str(store_dir), w) for w in range(WRITERS)])
    finally:  # also when a writer failed: never leave the loops running
        stop.set()
        for process in helpers:
            process.join(120)
            if process.is_alive():
                process.kill()
    added = [pair for part in parts for pair in part]
    assert all(process.exitcode == 0 for process in helpers)
    reports = {item[0]: item[1:] for item in (counts.get(timeout=10), counts.get(timeout=10))}
    assert reports["reindex"][0] >= 1 and reports["search"][0] >= 1 and reports["search"][1] == 0

    assert len({memory_id for memory_id, _ in added}) == WRITERS * ADDS_PER_WRITER
    exported = [json.loads(line) for line in run_cli(["export"], store_dir).stdout.splitlines()]
    assert sorted((r["id"], r["text"]) for r in exported) == sorted(added)
    for memory_id, text in random.Random(0).sample(added, 40):  # findable by keyword and by meaning
        marker = text.split(":")[0].split()[1]
        keyword = run_cli(["search", "--json", "--mode", "keyword", "-k", "1", marker], store_dir)
        assert json.loads(keyword.stdout)["id"] == memory_id
        vector = run_cli(["search", "--json", "--mode", "vector", "-k", "1", text], store_dir)
        assert json.loads(vector.stdout)["id"] == memory_id
    doctor = run_cli(["doctor"], store_dir)
    assert doctor.code == 0, doctor.stdout + doctor.stderr


ADD_LOOP = """
import sys
from remem.cli import main
store, start = sys.argv[1], int(sys.argv[2])
for i in range(start, start + 10_000):
    main(["add", "--store", store, f"crash test memory k{i}: survived number {i}"])
    sys.stdout.flush()
"""


def _kill_after(process: subprocess.Popen[bytes], seconds: float) -> None:
    time.sleep(seconds)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(30)


def _acknowledged_then_killed(process: subprocess.Popen[bytes], at_least: int, extra: float) -> list[int]:
    """Read the ids a writer acknowledges; kill it ``extra`` seconds after the ``at_least``-th."""
    assert process.stdout is not None
    ids = []
    while len(ids) < at_least:
        line = process.stdout.readline()
        assert line, "the writer stopped before acknowledging anything"
        ids.append(int(line))
    _kill_after(process, extra)
    ids.extend(int(line) for line in process.stdout.read().split())
    return ids


def test_kill_9_during_adds_and_reindexes_loses_no_acknowledged_memory(store_dir: Path) -> None:
    rng = random.Random(9)
    acknowledged: dict[int, str] = {}
    for round_ in range(4):
        adder = subprocess.Popen(
            [sys.executable, "-c", ADD_LOOP, str(store_dir), str(round_ * 10_000)], stdout=subprocess.PIPE
        )
        start = round_ * 10_000
        for n, memory_id in enumerate(_acknowledged_then_killed(adder, 6, rng.uniform(0.0, 1.0))):
            acknowledged[memory_id] = f"crash test memory k{start + n}: survived number {start + n}"
        reindexer = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "remem",
                "reindex",
                "--store",
                str(store_dir),
                "--force",
                "--index",
                "hnsw",
            ]
        )
        _kill_after(reindexer, rng.uniform(0.2, 1.0))
    assert len(acknowledged) > 20
    stored = {r["id"]: r["text"] for r in map(json.loads, run_cli(["export"], store_dir).stdout.splitlines())}
    assert {i: stored.get(i) for i in acknowledged} == acknowledged
    search = run_cli(["search", "--mode", "vector", "--json", "-k", "1", "survived number 7"], store_dir)
    assert search.code == 0
    doctor = run_cli(["doctor"], store_dir)
    assert doctor.code == 0, doctor.stdout + doctor.stderr


def test_every_process_sees_a_complete_index_file(store_dir: Path) -> None:
    """Readers racing a writer's atomic replace never read a torn file (no warnings, no errors)."""
    assert run_cli(["add", "first memory to create the store"], store_dir).code == 0
    writer = subprocess.Popen(
        [sys.executable, "-c", ADD_LOOP, str(store_dir), "50000"], stdout=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            result = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "remem",
                    "search",
                    "--store",
                    str(store_dir),
                    "--mode",
                    "vector",
                    "memory",
                ],
                capture_output=True,
                timeout=60,
                check=False,
            )
            assert result.returncode == 0 and b"Warning" not in result.stderr, result.stderr
    finally:
        writer.kill()
        writer.wait(30)
