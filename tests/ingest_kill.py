"""A big ``remem add --jsonl`` / ``remem import`` (``--from chatgpt`` too) killed with SIGKILL at
chosen points, then run again: the helpers of tests/integration/test_interrupted_ingest.py (and
test_interrupted_history_import.py), for either back-end.

The child is the real CLI with a fake embedder that counts what it embeds; it kills itself (a real
SIGKILL, nothing cleaned up) when a method of the staging area is called once more than allowed.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from helpers import run_cli
from remem.backends.local.files import STAGING_FILE
from remem.testing import FAKE_MODEL, fake_vector

#: The child: ``STORE SOURCE COMMAND WHERE AFTER``; WHERE is ``module:Class.method`` or
#: ``module:function`` (or ``-``): the process kills itself at call number AFTER + 1. It says how
#: many documents it embedded.
CHILD = """
import importlib, os, signal, sys
from remem.cli import main
from remem.testing import FakeEmbedder

store, source, command, where, after = sys.argv[1:6]

class Counting(FakeEmbedder):
    texts = 0
    def embed_documents(self, texts):
        Counting.texts += len(texts)
        return super().embed_documents(texts)

if where != "-":
    module, qualified = where.split(":")
    *owner_name, name = qualified.split(".")
    owner = importlib.import_module(module)
    owner = getattr(owner, owner_name[0]) if owner_name else owner
    original, calls = getattr(owner, name), [0]
    def killing(*args, **kwargs):
        calls[0] += 1
        if calls[0] > int(after):
            os.kill(os.getpid(), signal.SIGKILL)
        return original(*args, **kwargs)
    setattr(owner, name, killing)

args = {"import": ["import", source], "chatgpt": ["import", "--from", "chatgpt", source]}.get(
    command, ["add", "--jsonl", source]
)
code = main([*args, "--store", store], embedder=Counting())
sys.stderr.write(f"embedded {Counting.texts}\\n")
sys.exit(code)
"""

#: The input: memories outside a conversation, then a conversation's turns given out of order.
#: 10,050 memories: on PostgreSQL the move of more than 10,000 into a new store rebuilds the graph.
PLAIN, REPEATED, TURNS = 10_100, 100, 50
#: Memories one complete ingest adds (the repeated lines are duplicates).
ADDED = PLAIN - REPEATED + TURNS


BATCH = 2048  # remem.core.staged.STAGE_BATCH


#: The staging class of each back-end ("module:Class"), whose methods the child is killed in.
STAGING = {
    "local": "remem.backends.local.staged:LocalStaging",
    "postgres": "remem.backends.postgres.staged:PostgresStaging",
}

#: The points a child kills itself at, as pytest params of (staging method, calls it makes first,
#: rows staged then, documents left to embed); the same on both back-ends.
KILL_POINTS = [
    pytest.param("put", 2, 2 * BATCH, ADDED - 2 * BATCH, id="while-staging"),
    pytest.param("set_vectors", 0, PLAIN + TURNS, TURNS, id="before-the-turns"),
    pytest.param("move", 0, PLAIN + TURNS, 0, id="before-the-move"),
    pytest.param("_fresh_rows", 2, PLAIN + TURNS, 0, id="during-the-move"),
]


def kind_of(store: str) -> str:
    """``postgres`` for a ``postgresql://`` URL, ``local`` for a directory."""
    return "postgres" if store.startswith(("postgresql://", "postgres://")) else "local"


def staging_of(store: str) -> str:
    """The staging class ("module:Class") of the back-end ``store`` is on."""
    return STAGING[kind_of(store)]


def staged_runs(store: str) -> int:
    """How many staged (unfinished) ingests the store keeps: on PostgreSQL its staging area's runs;
    locally 1 while its staging file exists (a regular file), 0 once it is gone."""
    if kind_of(store) == "postgres":
        from remem.backends.postgres.store import PostgresBackend

        with PostgresBackend.open(store, create=False) as backend:
            return len(backend.staging().runs())
    path = Path(store) / STAGING_FILE
    if path.exists():
        assert path.is_file(), path
        return 1
    return 0


def write_input(path: Path, *, vectors: bool = False) -> list[str]:
    """Write the input (JSON lines; with ``vectors`` an export carrying the fake model's vectors);
    returns the texts one complete ingest stores, in input order."""
    texts = [f"memory {n}: the build of service {n % 97} took {n % 13} minutes" for n in range(PLAIN)]
    texts[5000 : 5000 + REPEATED] = texts[:REPEATED]
    start = datetime(2025, 3, 1, 9, tzinfo=timezone.utc)
    turns = [
        {
            "text": f"turn {n} about the trip",
            "conversation": "trip",
            "user": "ann",
            "created_at": (start + timedelta(minutes=n)).isoformat(),
        }
        for n in range(TURNS)
    ]
    random.Random(5).shuffle(turns)
    records = [{"text": text} for text in texts] + turns
    if vectors:
        for record in records:
            blob = fake_vector(str(record["text"])).astype("<f4").tobytes()
            record["vector"] = {
                "model": FAKE_MODEL.__dict__,
                "windows": 1,
                "float32_base64": base64.b64encode(blob).decode(),
            }
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return list(dict.fromkeys([*texts, *(str(t["text"]) for t in turns)]))


@dataclass(frozen=True)
class Run:
    """What one child did: its exit code (-9 when killed), stderr, and how many it embedded."""

    code: int
    stderr: str

    @property
    def embedded(self) -> int:
        found = re.search(r"^embedded (\d+)$", self.stderr, re.M)
        assert found, self.stderr[-500:]
        return int(found.group(1))

    @property
    def resumed(self) -> int:
        found = re.search(r"Resumed an interrupted ingest: ([\d,]+) of its entries", self.stderr)
        return int(found.group(1).replace(",", "")) if found else 0


def child(store: str, source: Path, command: str = "add", where: str = "-", after: int = 0) -> Run:
    """Run the CLI as a child (killed at ``where``'s call ``after + 1``, if given)."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, store, str(source), command, where, str(after)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=False,
    )
    return Run(done.returncode, done.stderr)


def killed_after(store: str, source: Path, seconds: float) -> int:
    """Start the child and SIGKILL it after ``seconds``; its exit code (-9 if it was killed)."""
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, store, str(source), "add", "-", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    time.sleep(seconds)
    os.kill(process.pid, signal.SIGKILL)
    return process.wait(30)


def texts_of(store: str) -> list[str]:
    """The texts of the store's memories, in id order (an empty list when there is no store)."""
    exported = run_cli(["export"], store)  # type: ignore[arg-type]
    return [json.loads(line)["text"] for line in exported.stdout.splitlines()]


def complete(store: str, expected: list[str]) -> None:
    """The store holds the memories of exactly one complete ingest, and `doctor` is content."""
    assert texts_of(store) == expected
    doctor = run_cli(["doctor"], store)  # type: ignore[arg-type]
    assert doctor.code == 0 and "staged ingests" not in doctor.stdout + doctor.stderr, doctor.stdout
