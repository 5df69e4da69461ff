"""A big import into a PostgreSQL store rebuilds its HNSW graph once (``backends/postgres/bulk.py``):
the same graph parameters and search results as adding the same memories in small batches, and a
killed connection or a killed importing process leaves the store with its graph and none of the
import. The threshold is lowered here so that a few thousand memories are "big"."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import numpy as np
import pytest

from remem.backends.postgres import bulk, upkeep
from remem.backends.postgres.store import PostgresBackend
from remem.backends.postgres.urls import parse
from remem.core.search.run import run_search
from remem.errors import ConnectionLostError
from remem.types import Filters, ModelInfo, NewMemory, SearchMode

DIM = 384
MODEL = ModelInfo(name="random-384", dim=DIM, pooling="mean", sha256="r" * 64)
IMPORT = 3000  # a graph build of a few seconds here: time to catch it midway


def _vectors(count: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _memories(start: int, count: int) -> list[NewMemory]:
    return [NewMemory(f"memory {i} of the import, topic {i % 37}") for i in range(start, start + count)]


def _add(backend: PostgresBackend, start: int, vectors: np.ndarray) -> None:
    backend.add_many(_memories(start, len(vectors)), [v.reshape(1, -1) for v in vectors], MODEL)


def _graph(url: str) -> tuple[int, str, bool] | None:
    """(oid, definition, valid) of the store's HNSW index, or None."""
    import psycopg

    with psycopg.connect(parse(url).conninfo) as conn:
        row = conn.execute(
            "SELECT i.indexrelid::bigint, pg_get_indexdef(i.indexrelid), i.indisvalid FROM pg_index i "
            "WHERE i.indexrelid = to_regclass(%s)",
            (f"{parse(url).schema}.vectors_hnsw",),
        ).fetchone()
    return None if row is None else (int(row[0]), str(row[1]), bool(row[2]))


def _count(url: str) -> tuple[int, int]:
    import psycopg

    schema = parse(url).schema
    with psycopg.connect(parse(url).conninfo) as conn:
        row = conn.execute(
            f"SELECT (SELECT count(*) FROM {schema}.memories), (SELECT count(*) FROM {schema}.vectors)"
        ).fetchone()
    return int(row[0]), int(row[1])  # type: ignore[index]


@pytest.fixture
def small_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk, "FLOOR", 200)


def _top(backend: PostgresBackend, queries: np.ndarray) -> list[list[int]]:
    return [
        [hit.memory.id for hit in run_search(backend, "", q, 10, Filters(), mode=SearchMode.VECTOR)]
        for q in queries
    ]


@pytest.mark.usefixtures("small_floor")
def test_a_big_add_rebuilds_the_graph_once_with_its_parameters_and_finds_the_same(postgres_url: str) -> None:
    vectors, queries = _vectors(1100, 1), _vectors(40, 2)
    found = []
    for name, batch in (("one", 1000), ("small", 100)):  # 1000 ≥ FLOOR rebuilds; 100 < FLOOR does not
        url = f"{postgres_url}_{name}"
        with PostgresBackend.open(url, create=True) as backend:
            backend.reindex("hnsw", (8, 40, 200), False)  # not the defaults: they must be kept
            _add(backend, 0, vectors[:100])
            before = _graph(url)
            assert before is not None and "m='8'" in before[1] and "ef_construction='40'" in before[1]
            for start in range(100, 1100, batch):
                _add(backend, start, vectors[start : start + batch])
            after = _graph(url)
            assert after is not None and after[1:] == before[1:]  # same definition, valid
            assert (after[0] != before[0]) == (name == "one")  # rebuilt only by the big add
            assert _count(url) == (1100, 1100)
            found.append(_top(backend, queries))
            with backend.session.transaction() as cursor:  # the build's settings ended with it
                cursor.execute(
                    "SELECT current_setting('maintenance_work_mem'), current_setting('statement_timeout')"
                )
                assert cursor.fetchone() == ("64MB", "1min")
    assert found[0] == found[1]


def _catch(url: str, phase: str, act: Any) -> int:
    """Poll the server until a backend of this store runs ``phase`` (a query's start); act on its
    pid, and return it."""
    import psycopg

    with psycopg.connect(parse(url).conninfo, autocommit=True) as conn:
        for _ in range(20_000):
            row = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE query LIKE %s AND query LIKE %s AND pid <> "
                "pg_backend_pid()",
                (f"{phase}%", f"%{parse(url).schema}%"),
            ).fetchone()
            if row is not None:
                act(conn, int(row[0]))
                return int(row[0])
            time.sleep(0.005)
    raise AssertionError(f"no backend ran {phase}")


def _gone(url: str, pid: int) -> None:
    import psycopg

    with psycopg.connect(parse(url).conninfo, autocommit=True) as conn:
        for _ in range(1200):
            if conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone() == (
                0,
            ):
                return
            time.sleep(0.05)
    raise AssertionError(f"backend {pid} still runs")


INSERTING, BUILDING = "INSERT INTO", "CREATE INDEX%(embedding)::vector"  # the rebuild, not a new store's
PHASES = [INSERTING, BUILDING]  # before the graph is dropped, and while it is rebuilt


@pytest.mark.usefixtures("small_floor")
@pytest.mark.parametrize(("phase", "first"), [(INSERTING, 100), (BUILDING, 100), (BUILDING, 0)])
def test_a_terminated_connection_leaves_the_graph_and_none_of_the_import(
    postgres_url: str, phase: str, first: int
) -> None:
    with PostgresBackend.open(postgres_url, create=True) as backend:
        if first:
            _add(backend, 0, _vectors(first, 3))
        before = _graph(postgres_url)
        errors: list[BaseException] = []

        def importing() -> None:
            try:
                _add(backend, 100, _vectors(IMPORT, 4))
            except BaseException as exc:
                errors.append(exc)

        worker = threading.Thread(target=importing)
        worker.start()
        terminate = "SELECT pg_terminate_backend(%s)"
        killed = _catch(postgres_url, phase, lambda conn, pid: conn.execute(terminate, (pid,)))
        worker.join(120)
        _gone(postgres_url, killed)
        assert len(errors) == 1 and isinstance(errors[0], ConnectionLostError), errors
        assert "not stored" in str(errors[0])
        after = _graph(postgres_url)  # the very same index (a new store's: the one made for its model)
        assert after is not None and after[2] and (before is None or after == before)
        assert _count(postgres_url) == (first, first)
        _add(backend, 5000, _vectors(300, 5))  # the store takes a big add again
        assert _count(postgres_url) == (first + 300, first + 300) and _graph(postgres_url) is not None


IMPORTER = """
import sys
import numpy as np
from remem.backends.postgres import bulk
from remem.backends.postgres.store import PostgresBackend
from remem.types import ModelInfo, NewMemory
bulk.FLOOR = 200
rows = np.random.default_rng(6).standard_normal((int(sys.argv[2]), 384)).astype(np.float32)
rows /= np.linalg.norm(rows, axis=1, keepdims=True)
model = ModelInfo(name="random-384", dim=384, pooling="mean", sha256="r" * 64)
with PostgresBackend.open(sys.argv[1], create=True) as backend:
    print("open", flush=True)
    items = [NewMemory(f"imported {i}") for i in range(len(rows))]
    backend.add_many(items, [r.reshape(1, -1) for r in rows], model)
    print("done", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("phase", PHASES)
def test_kill_9_of_the_importing_process_leaves_the_graph_and_none_of_the_import(
    postgres_url: str, phase: str
) -> None:
    with PostgresBackend.open(postgres_url, create=True) as backend:
        _add(backend, 0, _vectors(100, 3))
    before = _graph(postgres_url)
    process = subprocess.Popen(
        [sys.executable, "-c", IMPORTER, postgres_url, str(IMPORT)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline() == "open\n"
    killed = _catch(postgres_url, phase, lambda conn, pid: process.kill())
    process.wait(30)
    _gone(postgres_url, killed)  # the server notices the client is gone and rolls back
    assert _graph(postgres_url) == before
    assert _count(postgres_url) == (100, 100)


def _planner_counts(url: str) -> tuple[float, float]:
    """The planner's row counts (``reltuples``) of the store's memories and vectors."""
    import psycopg

    schema = parse(url).schema
    with psycopg.connect(parse(url).conninfo) as conn:
        row = conn.execute(
            "SELECT (SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)), "
            "(SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s))",
            (f"{schema}.memories", f"{schema}.vectors"),
        ).fetchone()
    return float(row[0]), float(row[1])  # type: ignore[index]


def test_an_add_large_for_the_store_renews_the_planners_statistics_and_a_small_one_does_not(
    postgres_url: str,
) -> None:
    """A just-loaded store must not be planned as empty (a filter selecting every memory made each
    vector search an exact scan): an add of ``ANALYZE_FLOOR`` memories and a tenth of the store
    analyses its tables; a smaller one leaves that to autovacuum (its threshold is not reached)."""
    floor = upkeep.ANALYZE_FLOOR
    vectors = _vectors(floor + 50, 3)
    with PostgresBackend.open(postgres_url, create=True) as backend:
        _add(backend, 0, vectors[:floor])
        assert _planner_counts(postgres_url) == (floor, floor)
        _add(backend, floor, vectors[floor:])
        assert _planner_counts(postgres_url) == (floor, floor)
        pending = backend.add_pending(_memories(floor + 50, floor))
        assert sum(not r.duplicate for r in pending) == floor
        assert _planner_counts(postgres_url)[0] == 2 * floor + 50
