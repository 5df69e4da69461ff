"""The local keyword lane through the terms' heads (``remem.backends.local.heads``) against the full
FTS5 query it replaces, on the same store in one process: how often the heads answer, whether their
top is the full query's to the bit (ids, order and scores), and what each costs.

    python bench/keyword_lane.py [--corpus zipf|scifact|locomo|memory] [--size 100000]
                                 [--store DIR] [--queries 200] [--depths 10,100] [--quick]

Corpora: ``zipf`` (``_harness.corpus`` of ``--size``, the queries of bench/search.py and
bench/scale.py; ``--store`` names a store already holding that corpus, e.g. bench/scale.py's
``WORK/store-1000000``), SciFact's documents and test queries and LoCoMo's turns and questions
(``--data``, default ../shared/bench/…), the memory-shaped set (tests/data). A new store is built
with the fake embedder (the keyword lane reads no vector). Every store is searched with the heads
whatever its size (``heads.PRUNE_FROM`` is for the product: a small store's full query is cheap).

For each depth (10: keyword mode's top; 100: hybrid's keyword lane), every query runs twice
untimed through the heads (taking them: a term's the second time it is met), then timed: the full
query (``fts.search``), the heads this process took (``heads.top``, and the full query after it
when the heads cannot show their top exact), and the heads stored in the store, met for the first
time (``heads.top`` with a new cache for each query, as a new process or a word not met before:
``keyword_heads``, taken first when they are behind or missing, as ``remem compact`` does), in turn.
Exact means equal to the full query's list; recall@depth is the share of its ids found.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import _harness
import remem
from remem import Filters, NewMemory
from remem.backends.analyzer import term_queries
from remem.backends.local import fts, heads, keywords, stored_heads
from remem.testing import FakeEmbedder

SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench"
MEMORY_SET = Path(__file__).resolve().parents[1] / "tests" / "data" / "memory_set.json"


def corpus(name: str, size: int, data: Path) -> tuple[list[NewMemory], list[str]]:
    """The corpus's memories and its queries."""
    if name == "zipf":
        texts, ids = _harness.corpus(size)
        return [NewMemory(t) for t in texts], _harness.queries(texts, ids, 1_000)
    if name == "scifact":
        rows = [json.loads(line) for line in (data / "scifact" / "corpus.jsonl").open()]
        asked = [json.loads(line)["text"] for line in (data / "scifact" / "queries_test.jsonl").open()]
        return [NewMemory(_harness.document_text(row)) for row in rows], asked
    if name == "locomo":
        from locomo import load, turns

        conversations = load(data / "locomo")
        memories = [m for name_, c in conversations.items() for m in turns(c, name_)]
        return memories, [qa["question"] for c in conversations.values() for qa in c["qa"]]
    found = json.loads(MEMORY_SET.read_text())
    return [NewMemory(m["text"]) for m in found["memories"]], [q["text"] for q in found["queries"]]


def store_of(memories: list[NewMemory], place: Path) -> Path:
    """A store holding ``memories`` (fake vectors), built in batches."""
    with remem.open(place, embedder=FakeEmbedder()) as opened:
        for start in range(0, len(memories), 5_000):
            opened.add_many(memories[start : start + 5_000])
            _harness.note(f"  stored {min(start + 5_000, len(memories)):,}/{len(memories):,}")
    return place


def measure(conn: sqlite3.Connection, queries: list[str], depth: int) -> list[object]:
    """One table row: queries, answered by the heads, exact, recall@depth, full and heads p50/p95 ms."""
    counts, cache = keywords.KeywordCounts(), heads.Heads()
    asked = [terms for terms in (term_queries(q) for q in queries) if terms]
    plans = []
    for terms in asked:  # untimed: take the heads
        held = [counts.holders(conn, counts.stamp(conn), term) for term in terms]
        plans.append((terms, held))
        heads.top(conn, cache, terms, held, Filters(), depth)
        heads.top(conn, cache, terms, held, Filters(), depth)  # a term's head: the second time it is met
    full_ms, heads_ms, stored_ms, answered, exact, recall = [], [], [], [0, 0], [0, 0], []
    for terms, held in plans:
        started = time.perf_counter()
        expected = fts.search(conn, " OR ".join(terms), Filters(), depth)
        full_ms.append(time.perf_counter() - started)
        for place, (kept, spent) in enumerate([(cache, heads_ms), (heads.Heads(), stored_ms)]):
            started = time.perf_counter()
            found = heads.top(conn, kept, terms, held, Filters(), depth)
            got = found if found is not None else fts.search(conn, " OR ".join(terms), Filters(), depth)
            spent.append(time.perf_counter() - started)
            answered[place] += found is not None
            exact[place] += got == expected
            wanted = {mid for mid, _ in expected}
            if place == 0:
                recall.append(len(wanted & {mid for mid, _ in got}) / len(wanted) if wanted else 1.0)
    n = len(plans)
    return [
        n,
        f"{answered[0] / n:.0%} / {answered[1] / n:.0%}",
        f"{exact[0]}/{n}, {exact[1]}/{n}",
        f"{statistics.mean(recall):.4f}",
        *_ms(full_ms),
        *_ms(heads_ms),
        *_ms(stored_ms),
    ]


def _ms(seconds: list[float]) -> list[str]:
    return [f"{statistics.median(seconds) * 1e3:.2f}", f"{_harness.percentile(seconds, 0.95) * 1e3:.2f}"]


def main() -> None:
    """Build or open the store, measure each depth, print the table."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--corpus", default="zipf", choices=["zipf", "scifact", "locomo", "memory"])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--store", type=Path)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--depths", type=_harness.int_list, default=[10, 100])
    parser.add_argument("--data", type=Path, default=SHARED)
    args = parser.parse_args()
    if args.quick:
        args.size, args.queries = 3_000, 40
    print(_harness.machine())
    memories, queries = corpus(args.corpus, args.size, args.data)
    queries = queries[: args.queries]
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store or store_of(memories, Path(tmp) / "store")
        conn = sqlite3.connect(store / "memories.sqlite3", isolation_level=None)  # as the store's own
        if stored_heads.behind(conn) or not conn.execute("SELECT count(*) FROM keyword_heads").fetchone()[0]:
            with remem.open(store) as opened:
                started = time.perf_counter()
                taken = opened.backend.refresh_heads()
                _harness.note(
                    f"  stored the heads of {taken:,} words in {time.perf_counter() - started:.1f} s"
                )
        rows = fts.row_count(conn)
        table = [[f"{args.corpus} {rows:,}", depth, *measure(conn, queries, depth)] for depth in args.depths]
        conn.close()
    _harness.table(
        [
            "store",
            "depth",
            "queries",
            "heads answer (kept / stored)",
            "exact (kept, stored)",
            "recall@depth",
            "full p50 ms",
            "full p95",
            "kept heads p50 ms",
            "p95",
            "stored heads p50 ms",
            "p95",
        ],
        table,
    )


if __name__ == "__main__":
    main()
