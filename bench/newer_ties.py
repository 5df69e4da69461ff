"""Should the newer of two near-duplicate memories win ties? Measured on every corpus together.

    python bench/newer_ties.py [--corpora updates,memory_set,locomo,scifact] [--deltas 0.008,inf]

Issue 29 asked: when two memories disagree and neither supersedes the other, does letting the newer
of two near-duplicates win near ties help on the update set without hurting SciFact, LoCoMo or the
memory-shaped set? This bench wraps ``remem.core.ranking.rank`` (hybrid mode only): among the top
``WINDOW`` fused results, two memories whose vectors have a cosine of at least ``NEAR`` (the
similar-memory threshold) and whose fused scores differ by at most ``delta`` are put newer
(later ``created_at``, then larger id) first. ``delta`` inf: the newer always wins. Each corpus is
stored once and searched with the rule off (the baseline, measured in the same run) and on.

Metrics: the update set (``tests/data/update_set.json``, newer facts added plainly after the old
ones): the newer fact's hit@1 and how often the old fact ranks above it; the memory-shaped set:
hybrid hit@1; LoCoMo: evidence recall@10; SciFact: nDCG@10.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import remem
from remem.core import ranking
from remem.core.superseding import SIMILAR_THRESHOLD
from remem.types import SearchMode

sys.path.insert(0, str(Path(__file__).resolve().parent))

import beir
import locomo
import memory_set

NEAR = SIMILAR_THRESHOLD
WINDOW = 10
ROOT = Path(__file__).resolve().parent.parent
_ORIGINAL_RANK = ranking.rank


def newer_first(delta: float) -> Callable[..., list[ranking.Ranked]]:
    """``ranking.rank`` with near-duplicates in its top ``WINDOW`` put newer first within ``delta``."""

    def rank(backend: Any, lane: Any, query: Any, vector: Any, k: int, filters: Any, mode: Any) -> Any:
        ranked = _ORIGINAL_RANK(backend, lane, query, vector, k, filters, mode)
        if mode is not SearchMode.HYBRID or len(ranked) < 2:
            return ranked
        top, rest = ranked[:WINDOW], ranked[WINDOW:]
        ids = [r.id for r in top]
        vectors = backend.vectors_of_memories(ids)
        memories = backend.get_many(ids)
        unit = {
            mid: np.frombuffer(blobs[0], dtype="<f4")
            for mid, blobs in vectors.items()
            if blobs and mid in memories
        }
        order = list(top)
        moved = True
        while moved:  # bubble the newer of each near-duplicate pair up past the older
            moved = False
            for i in range(len(order) - 1):
                for j in range(i + 1, len(order)):
                    a, b = order[i], order[j]
                    if a.id not in unit or b.id not in unit or a.score - b.score > delta:
                        continue
                    newer = (memories[b.id].created_at, b.id) > (memories[a.id].created_at, a.id)
                    if newer and float(unit[a.id] @ unit[b.id]) >= NEAR:
                        order.insert(i, order.pop(j))
                        moved = True
                        break
                if moved:
                    break
        return order + rest

    return rank


def updates_run(memories: remem.Memories, data: dict[str, Any]) -> Callable[[], str]:
    """Store the update set plainly (old facts first); a function measuring it."""
    for item in data["background"]:
        memories.add(item["text"] if isinstance(item, dict) else item)
    for pair in data["related"]:
        memories.add(pair["first"])
        memories.add(pair["second"])
    ids = {}
    for pair in data["updates"]:
        ids[pair["key"]] = (memories.add(pair["old"]).id, memories.add(pair["new"]).id)

    def measure() -> str:
        first = above = 0
        for pair in data["updates"]:
            found = [hit.memory.id for hit in memories.search(pair["question"], k=5)]
            old, new = ids[pair["key"]]
            first += bool(found) and found[0] == new
            above += old in found and (new not in found or found.index(old) < found.index(new))
        return (
            f"newer hit@1 {first / len(data['updates']):.3f}, old above newer {above}/{len(data['updates'])}"
        )

    return measure


def memory_set_run(data: dict[str, Any]) -> Callable[[], str]:
    """A function measuring the memory-shaped set's hybrid hit@1 (its own store each time)."""

    def measure() -> str:
        with tempfile.TemporaryDirectory() as scratch:
            ranks = memory_set.evaluate(data, Path(scratch) / "store")
        hybrid = ranks[("hybrid", "all")]
        return f"hybrid hit@1 {statistics.fmean(r == 1 for r in hybrid):.3f}"

    return measure


def main() -> None:
    """Store each corpus once, measure it with the rule off and on for each delta, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", default="updates,memory_set,locomo,scifact")
    parser.add_argument("--deltas", default="0.008,inf")
    parser.add_argument("--locomo", type=Path, default=ROOT.parent / "shared/bench/locomo")
    parser.add_argument("--scifact", type=Path, default=beir.DEFAULT_DATA)
    args = parser.parse_args()
    deltas = [math.inf if d == "inf" else float(d) for d in args.deltas.split(",")]
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="remem-newer-") as scratch:
        for corpus in args.corpora.split(","):
            measure = prepare(corpus, Path(scratch) / corpus, args)
            for label, delta in [("off (baseline)", None), *((f"on, delta {d}", d) for d in deltas)]:
                ranking.rank = _ORIGINAL_RANK if delta is None else newer_first(delta)  # type: ignore[assignment]
                rows.append((corpus, label, measure()))
                print(f"  {corpus} {label}: {rows[-1][2]}", file=sys.stderr)
            ranking.rank = _ORIGINAL_RANK  # type: ignore[assignment]
    print(f"near-duplicates: cosine ≥ {NEAR}; window: top {WINDOW}\n")
    print("| corpus | newer wins | result |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def prepare(corpus: str, store: Path, args: argparse.Namespace) -> Callable[[], str]:
    """Store ``corpus``; the function that measures it."""
    if corpus == "updates":
        memories = remem.open(store)
        return updates_run(memories, json.loads((ROOT / "tests/data/update_set.json").read_text()))
    if corpus == "memory_set":
        return memory_set_run(json.loads(memory_set.DEFAULT_SET.read_text()))
    if corpus == "locomo":
        data = locomo.load(args.locomo)
        memories = remem.open(store)
        locomo.ingest(memories, data)
        return lambda: f"recall@10 {locomo.evaluate(memories, data, SearchMode.HYBRID)['all'][0]:.3f}"
    dataset = beir.load_dataset(args.scifact)
    embedder = beir.TimedEmbedder(remem.model_catalog().load("all-minilm-l6-v2", verify=True))
    memories = remem.open(store, embedder=embedder)
    beir.ingest(memories, embedder, dataset.docs, 256)
    mapping = beir.memory_to_docs(memories, dataset.docs)

    def measure() -> str:
        rankings, _, _ = beir.retrieve(memories, embedder, dataset, SearchMode.HYBRID, mapping)
        return f"nDCG@10 {beir.evaluate(dataset.qrels, rankings)['nDCG@10']:.4f}"

    return measure


if __name__ == "__main__":
    main()
