"""Shared test helpers: the fake embedder, an in-process CLI runner, searches below the API."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import numpy as np
import pytest
from typer.testing import CliRunner

from remem import Embedder, Filters, Hit, SearchMode, SearchResult
from remem.backends.base import Backend
from remem.cli import main
from remem.core.search.run import run_search
from remem.testing import FAKE_DIM, FAKE_MODEL, FakeEmbedder, fake_vector

__all__ = [
    "FAKE_DIM",
    "FAKE_MODEL",
    "Child",
    "FakeEmbedder",
    "Outcome",
    "fake_vector",
    "fewest_statements",
    "one_error",
    "run_cli",
    "run_measured",
    "search",
    "vector_search",
]

T = TypeVar("T")

#: Tries of ``fewest_statements``: one whose snapshot saw no other transaction end since the one
#: before it is all it takes.
STATEMENT_TRIES = 5

#: The embedder in-process CLI runs use: None runs the real model; tests/cli sets a FakeEmbedder.
CLI = {"embedder": None}


@dataclass(frozen=True)
class Outcome:
    """What one CLI run produced."""

    code: int
    stdout: str
    stderr: str


def run_cli(args: list[str], store: Path | None = None, stdin: bytes | str | None = None) -> Outcome:
    """Run ``remem ARGS`` in this process (with ``--store`` when given) and capture its output."""
    argv = [*args, "--store", str(store)] if store is not None else list(args)
    embedder: Embedder | None = CLI["embedder"]
    with CliRunner().isolation(input=stdin) as (out, err, _):
        code = main(argv, embedder=embedder)
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return Outcome(code, stdout, stderr)


@dataclass(frozen=True)
class Child:
    """How a real child process ended: its exit code, stderr and peak resident memory."""

    code: int
    stderr: str
    peak_mib: float


def run_measured(cmd: list[str], stdin: IO[bytes] | None = None) -> Child:
    """Run ``cmd`` (stdin from an open file, or none) to its end: its exit code, stderr and peak RSS
    (its own, from ``wait4``, not any other child's)."""
    with subprocess.Popen(
        cmd,
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stderr is not None
        stderr = proc.stderr.read().decode(errors="replace")
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return Child(proc.returncode, stderr, usage.ru_maxrss / 1024)


def search(
    backend: Backend, text: str, vector: np.ndarray | None, k: int, filters: Filters, **options: Any
) -> SearchResult:
    """A search of a back-end with a given query vector, through the core's ranking."""
    return run_search(backend, text, vector, k, filters, **options)


def cosine(hit: Hit) -> float:
    """A hit's raw cosine (its vector lane's score; ``hit.score`` is the calibrated relevance)."""
    assert hit.vector is not None
    return hit.vector.score


def vector_search(
    backend: Backend, vector: np.ndarray | None, k: int, filters: Filters, **options: Any
) -> list[Hit]:
    """The hits of a vector-mode search (no query text)."""
    options.setdefault("mode", SearchMode.VECTOR)
    return list(search(backend, "", vector, k, filters, **options))


def int8_kernels() -> str:
    """Which of onnxruntime's x86 int8 matrix kernels this CPU runs: ``vnni`` (AVX-512 VNNI or
    AVX-VNNI: exact int32 sums), ``avx2`` (u8 × s8 products summed in pairs into int16, which
    saturates), or ``unknown`` (no /proc/cpuinfo). The bundled model's earlier 8-bit file gave
    vectors that differed between the two (cosine 0.953 at worst over 45 sentences); the shipped
    7-bit file cannot saturate, so both compute the same integer sums (their speed still differs)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    lines = [line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")]
    flags = set(lines[0]) if lines else set()
    if {"avx512_vnni", "avx_vnni"} & flags:
        return "vnni"
    return "avx2" if "avx2" in flags else "unknown"


def one_error(stderr: str, expected: str) -> None:
    """Assert that ``stderr`` has exactly one ``Error:`` line, containing ``expected``, and never
    names an unexpected exception."""
    errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and expected in errors[0], stderr
    assert "unexpected" not in stderr


def bench_module(name: str) -> Any:
    """bench/NAME.py imported as a module, as when it runs as a script: its folder (with
    ``_harness.py``) on ``sys.path``."""
    import importlib.util
    import sys

    folder = Path(__file__).resolve().parents[1] / "bench"
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of an import graph of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def fewest_statements(action: Callable[[], T], tries: int = STATEMENT_TRIES) -> tuple[T, list[str]]:
    """What ``action`` returned and the SQL statements psycopg sent while it ran (every thread's),
    of the try (of ``tries``, one after another) that sent fewest. A PostgreSQL store counts its
    terms' statistics again when its snapshot's stamp changed (``postgres/unchanged.py``): any
    transaction ending anywhere on the server changes it, as other tests' do when they run in
    parallel on the same server; a try that saw none sends what an unchanged store costs."""
    import psycopg  # only the tests that count statements need it

    real = psycopg.Cursor.execute
    best: tuple[T, list[str]] | None = None
    for _ in range(tries):
        statements: list[str] = []

        def counted(cursor: Any, query: Any, *args: Any, sent: list[str] = statements, **kwargs: Any) -> Any:
            sent.append(str(query))
            return real(cursor, query, *args, **kwargs)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(psycopg.Cursor, "execute", counted)
            found = action()
        if best is None or len(statements) < len(best[1]):
            best = (found, statements)
    assert best is not None
    return best
