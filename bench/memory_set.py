"""hit@1 / hit@3 of each search mode on remem's memory-shaped set (tests/data/memory_set.json).

    python bench/memory_set.py [--set tests/data/memory_set.json]

Goes through the public Python API on a temporary store (``remem.open``, ``Memories.add``,
``Memories.search(..., k=3, mode=...)``), the same calls `remem add` and `remem search` make, with the
model a new store takes (as the CLI chooses it), so it measures exactly what users get. Prints one
row per mode and query kind.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import remem

MODES = ("vector", "keyword", "hybrid")
DEFAULT_SET = Path(__file__).resolve().parent.parent / "tests" / "data" / "memory_set.json"


def evaluate(data: dict[str, list[dict[str, str]]], store: Path) -> dict[tuple[str, str], list[int]]:
    """For every (mode, kind), the 1-based rank of each query's answer (0 if not in the top 3)."""
    ranks: dict[tuple[str, str], list[int]] = defaultdict(list)
    with remem.open(store) as memories:
        ids = {m["key"]: memories.add(m["text"]).id for m in data["memories"]}
        for note in memories.notes:  # which model the new store took, as the CLI says it
            print(note, file=sys.stderr)
        for mode in MODES:
            for query in data["queries"]:
                found = [hit.memory.id for hit in memories.search(query["text"], k=3, mode=mode)]
                rank = found.index(ids[query["answer"]]) + 1 if ids[query["answer"]] in found else 0
                ranks[(mode, query["kind"])].append(rank)
                ranks[(mode, "all")].append(rank)
    return ranks


def main() -> None:
    """Load the set, evaluate every mode, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    data = json.loads(parser.parse_args().set.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        ranks = evaluate(data, Path(tmp) / "store")
    print(f"{len(data['memories'])} memories, {len(data['queries'])} queries\n")
    print("| mode | queries | n | hit@1 | hit@3 |")
    print("|---|---|---:|---:|---:|")
    for mode in MODES:
        for kind in ("paraphrase", "identifier", "all"):
            found = ranks[(mode, kind)]
            hit1 = sum(r == 1 for r in found) / len(found)
            hit3 = sum(r >= 1 for r in found) / len(found)
            print(f"| {mode} | {kind} | {len(found)} | {hit1:.2f} | {hit3:.2f} |")


if __name__ == "__main__":
    main()
