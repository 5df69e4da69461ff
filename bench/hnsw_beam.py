"""Recall@10 and latency of a store's HNSW graph by search beam (efSearch), against the exact top 10.

    python bench/hnsw_beam.py STORE QUERIES.json [--beams 16,32,64,128,256,512,1024] [--queries 200]

STORE is a local store whose index is HNSW (``remem reindex --index hnsw``); QUERIES a JSON list of
query texts (``bench/scale.py`` writes ``WORK/queries-SIZE.json``). The queries are embedded with the
store's model; the truth is the exact top 10 of every vector in the graph (numpy over FAISS's own
copy of them); each beam then searches the graph alone, one FAISS thread, one query at a time: p50
and p99 ms and recall@10. This is what set HNSW's default beam (``backends/local/kinds.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # after the thread setting

import remem


def main() -> None:
    """Embed the queries, find the exact truth, then time and score each beam."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("queries", type=Path)
    parser.add_argument("--beams", default="16,32,64,128,256,512,1024")
    parser.add_argument("--queries", dest="count", type=int, default=200)
    args = parser.parse_args()
    import faiss

    memories = remem.open(args.store)
    embedder = memories.embedder()
    texts = json.loads(args.queries.read_text())[: args.count]
    queries = np.stack([embedder.embed_queries([t]).vectors[0] for t in texts]).astype(np.float32)
    index = memories.backend.vector_index(embedder.info.dim)  # type: ignore[attr-defined]
    graph = index._engine._index  # the IndexIDMap2 over the IndexHNSWFlat
    inner = faiss.downcast_index(graph.index)
    ids = faiss.vector_to_array(graph.id_map)
    stored = faiss.downcast_index(inner.storage)
    matrix = faiss.rev_swig_ptr(stored.get_xb(), inner.ntotal * inner.d).reshape(inner.ntotal, inner.d)
    truth = []
    for query in queries:
        scores = matrix @ query
        top = np.argpartition(-scores, 10)[:10]
        truth.append(set(ids[top].tolist()))
    faiss.omp_set_num_threads(1)
    print(f"{inner.ntotal:,} vectors, {len(texts)} queries")
    print(f"{'efSearch':>8} {'recall@10':>10} {'p50 ms':>8} {'p99 ms':>8}")
    for beam in (int(b) for b in args.beams.split(",")):
        params = faiss.SearchParametersHNSW()
        params.efSearch = beam
        took, found = [], 0
        for query, wanted in zip(queries, truth, strict=True):
            start = time.perf_counter()
            _, labels = graph.search(query.reshape(1, -1), 10, params=params)
            took.append((time.perf_counter() - start) * 1000)
            found += len(wanted & set(labels[0].tolist()))
        p99 = sorted(took)[max(0, int(0.99 * len(took)) - 1)]
        print(f"{beam:>8} {found / (10 * len(texts)):>10.4f} {statistics.median(took):>8.2f} {p99:>8.2f}")


if __name__ == "__main__":
    main()
