"""Conversation memory on LoCoMo: evidence recall@10 and hit@10 per question category and mode.

    python bench/locomo.py [--data ../shared/bench/locomo] [--store DIR|URL] [--modes vector,keyword,hybrid]
                           [--no-dates] [--quick]

The protocol of the data's README, through the public API as a Python user would run it: every turn
is one memory — text = the turn's text (plus `` [shares a photo: CAPTION]`` when it has a caption),
role = the speaker, conversation = the file's name, created_at = the session's date-time plus one
second per turn, meta ``dia_id`` — added with ``Memories.add_many`` (the bundled model, or whatever
model the store chooses). Each question of categories 1–4 with evidence is searched within its
conversation (``conversation=`` filter), top 10, its time words read as a search reads them: a
written date ("on 16 November, 2023") or a month and year ("in May 2023") restricts the search to
it; words relative to today ("last week", "in October") name a window the conversations (2022–2023)
have no turn in, so the search falls back to all time with the rest of the question. ``--no-dates``
searches with ``dates=False`` instead, as this bench did before written dates were read.
Evidence recall@10 is the share of a question's evidence turns in its top 10, averaged; hit@10 that
at least one is there.

The data is not part of the repository (evaluation only): pass its folder with ``--data``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import _harness
import remem
from remem import NewMemory, SearchMode

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
K = 10


def _session_time(text: str) -> datetime:
    """``1:56 pm on 8 May, 2023`` as a UTC datetime (the data gives no zone)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def turns(conversation: dict[str, Any], name: str) -> Iterator[NewMemory]:
    """Every turn of one conversation as a memory (see the module docstring)."""
    number = 1
    while f"session_{number}" in conversation:
        started = _session_time(conversation[f"session_{number}_date_time"])
        for offset, turn in enumerate(conversation[f"session_{number}"]):
            text = turn["text"] + (
                f" [shares a photo: {turn['blip_caption']}]" if turn.get("blip_caption") else ""
            )
            at = (started + timedelta(seconds=offset)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            yield NewMemory(
                text, role=turn["speaker"], conversation=name, created_at=at, meta={"dia_id": turn["dia_id"]}
            )
        number += 1


def load(directory: Path) -> dict[str, dict[str, Any]]:
    """Conversation name → its JSON, for every file of the data."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))}


def ingest(memories: remem.Memories, data: dict[str, dict[str, Any]]) -> float:
    """Add every turn not stored yet; seconds spent."""
    started = time.perf_counter()
    stored = {m.conversation for m in memories.iter()}
    for name, conversation in data.items():
        if name not in stored:
            memories.add_many(list(turns(conversation, name)))
            print(f"\r  ingested conversation {name}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return time.perf_counter() - started


def evaluate(
    memories: remem.Memories, data: dict[str, dict[str, Any]], mode: SearchMode, dates: bool = True
) -> dict[str, Any]:
    """Recall@10 and hit@10 per category (and overall) of one mode, and seconds per question."""
    recall: dict[str, list[float]] = defaultdict(list)
    started, asked = time.perf_counter(), 0
    for name, conversation in data.items():
        for qa in conversation["qa"]:
            category = CATEGORIES.get(qa.get("category", 0))
            evidence = set(qa.get("evidence") or [])
            if category is None or not evidence:
                continue
            hits = memories.search(str(qa["question"]), k=K, mode=mode, conversation=name, dates=dates)
            found = {hit.memory.meta.get("dia_id") for hit in hits}
            share = len(found & evidence) / len(evidence)
            for key in (category, "all"):
                recall[key].append(share)
            asked += 1
    seconds = (time.perf_counter() - started) / max(asked, 1)
    return {
        key: (statistics.fmean(values), statistics.fmean(v > 0 for v in values), len(values))
        for key, values in recall.items()
    } | {"seconds": seconds}


def main() -> None:
    """Ingest (or reuse) the store, evaluate each mode, print the table."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--data", type=Path, default=_harness.SHARED / "locomo")
    parser.add_argument("--store", help="keep the store here, a directory or a postgresql:// URL")
    parser.add_argument("--modes", default="vector,keyword,hybrid")
    parser.add_argument("--no-dates", action="store_true", help="do not read the questions' time words")
    args = parser.parse_args()
    data = load(args.data)
    if not data:
        sys.exit(f"Error: no LoCoMo conversations in {args.data}")
    if args.quick:  # the first conversation and its first 40 questions
        name, first = next(iter(data.items()))
        data = {name: {**first, "qa": first["qa"][:40]}}
    print(_harness.machine())
    with (
        tempfile.TemporaryDirectory(prefix="remem-locomo-") as scratch,
        remem.open(args.store or Path(scratch) / "store") as memories,
    ):
        seconds = ingest(memories, data)
        modes = [SearchMode(mode) for mode in args.modes.split(",")]
        results = {mode.value: evaluate(memories, data, mode, not args.no_dates) for mode in modes}
        model = memories.model
    print(f"model: {model.name if model else '?'}; ingest {seconds:.1f} s (0 when reused)", end="")
    print("; time words not read\n" if args.no_dates else "\n")
    columns = [*CATEGORIES.values(), "all"]
    print("| mode | " + " | ".join(f"{c} R@10 / hit@10" for c in columns) + " | ms/question |")
    print("|---|" + "---:|" * (len(columns) + 1))
    for mode, result in results.items():
        cells = [f"{result[c][0]:.3f} / {result[c][1]:.3f}" if c in result else "—" for c in columns]
        print(f"| {mode} | " + " | ".join(cells) + f" | {result['seconds'] * 1000:.1f} |")
    first = results[next(iter(results))]
    counts = ", ".join(f"{c} {first[c][2] if c in first else 0}" for c in columns)
    print(f"\nquestions: {counts}")


if __name__ == "__main__":
    main()
