"""hit@1 / hit@3 of each search mode on remem's memory-shaped set (tests/data/memory_set.json).

    python bench/memory_set.py [--set tests/data/memory_set.json]

Goes through the real CLI in-process (`remem add`, `remem search --json --mode ...`) on a temporary
store, so it measures exactly what users get. Prints one row per mode and query kind.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from collections import defaultdict
from pathlib import Path

from remem.cli import main

MODES = ("vector", "keyword", "hybrid")
DEFAULT_SET = Path(__file__).resolve().parent.parent / "tests" / "data" / "memory_set.json"


def run(args: list[str]) -> str:
    """stdout of one in-process remem run."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(args)
    return out.getvalue()


def evaluate(data: dict[str, list[dict[str, str]]], store: Path) -> dict[tuple[str, str], list[int]]:
    """For every (mode, kind), the 1-based rank of each query's answer (0 if not in the top 3)."""
    ids = {m["key"]: int(run(["add", "--store", str(store), m["text"]]).strip()) for m in data["memories"]}
    ranks: dict[tuple[str, str], list[int]] = defaultdict(list)
    for mode in MODES:
        for query in data["queries"]:
            out = run(["search", "--store", str(store), "--json", "--mode", mode, "-k", "3", query["text"]])
            found = [json.loads(line)["id"] for line in out.splitlines()]
            rank = found.index(ids[query["answer"]]) + 1 if ids[query["answer"]] in found else 0
            ranks[(mode, query["kind"])].append(rank)
            ranks[(mode, "all")].append(rank)
    return ranks


def main_bench() -> None:
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
    main_bench()
