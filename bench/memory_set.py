"""hit@1 / hit@3 of each search mode on remem's memory-shaped set (tests/data/memory_set.json).

    python bench/memory_set.py [--set tests/data/memory_set.json]

Goes through the public Python API on a temporary store (``remem.open``, ``Memories.add``,
``Memories.search(..., k=3, mode=...)``), the same calls `remem add` and `remem search` make, with the
model a new store takes (as the CLI chooses it), so it measures exactly what users get. Prints one
row per mode and query kind. A memory's ``when`` dates it relative to the run (local noon): a number
of days ago, a weekday (the most recent one before today) or ``last-week`` (Friday of last week).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

import _harness
import remem

MODES = ("vector", "keyword", "hybrid")
KINDS = ("paraphrase", "identifier", "temporal", "phrase", "cjk", "all")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def created_at(when: int | str | None, now: datetime) -> datetime | None:
    """A memory's creation time from its ``when`` (None: now, as the store sets it)."""
    if when is None:
        return None
    noon = now.replace(hour=12, minute=0, second=0, microsecond=0)
    if isinstance(when, int):
        return noon - timedelta(days=when)
    if when == "last-week":
        return noon - timedelta(days=now.weekday() + 3)
    return noon - timedelta(days=(now.weekday() - WEEKDAYS.index(when) - 1) % 7 + 1)


DEFAULT_SET = Path(__file__).resolve().parent.parent / "tests" / "data" / "memory_set.json"


def evaluate(data: dict[str, list[dict[str, str]]], store: Path) -> dict[tuple[str, str], list[int]]:
    """For every (mode, kind), the 1-based rank of each query's answer (0 if not in the top 3)."""
    ranks: dict[tuple[str, str], list[int]] = defaultdict(list)
    now = datetime.now().astimezone()
    with remem.open(store) as memories:
        ids = {
            m["key"]: memories.add(m["text"], created_at=created_at(m.get("when"), now)).id
            for m in data["memories"]
        }
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
    parser = _harness.parser(__doc__ + "\n(the set is small: --quick runs it whole)")
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    data = json.loads(parser.parse_args().set.read_text())
    print(_harness.machine())
    with tempfile.TemporaryDirectory() as tmp:
        ranks = evaluate(data, Path(tmp) / "store")
    print(f"{len(data['memories'])} memories, {len(data['queries'])} queries\n")
    print("| mode | queries | n | hit@1 | hit@3 |")
    print("|---|---|---:|---:|---:|")
    for mode in MODES:
        for kind in KINDS:
            found = ranks[(mode, kind)]
            if not found:
                continue
            hit1 = sum(r == 1 for r in found) / len(found)
            hit3 = sum(r >= 1 for r in found) / len(found)
            print(f"| {mode} | {kind} | {len(found)} | {hit1:.2f} | {hit3:.2f} |")


if __name__ == "__main__":
    main()
