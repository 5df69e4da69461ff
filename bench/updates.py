"""Calibrate the "a similar memory exists" notice on remem's set of memories that change.

    python bench/updates.py [--set tests/data/update_set.json] [--threshold T] [--all-rows]

The set (tests/data/update_set.json) holds update pairs (an old fact and a newer one that replaces
it, with a question about the current state), related pairs (two memories on one topic, both true)
and background memories. Goes through the public Python API on a temporary store (``remem.open``,
``Memories.embedder().embed_documents``, ``Memories.add``, ``Memories.search``) with the model a new
store takes (as the CLI chooses it), so it measures the vectors users' memories get.

Calibration: for each newer memory (an update's ``new``, a related pair's ``second``) the best
cosine against every other memory of the set (best pair of windows), which is what the notice sees
once the memory is embedded, and which memory that is. At a threshold t the notice fires when that
best cosine is ≥ t; for an update it is right when it also names the old fact (top 1). Recall: the
share of updates where it fires and names the old fact; false alarms: the share of related
``second`` memories where it fires at all; precision: right notices over all notices of both kinds.
The threshold is the one with the best F1 on the items without ``holdout`` (ties: the lowest false
alarm rate, then the highest threshold); the holdout items are reported apart. ``bg fires`` is the
share of background memories whose best cosine against the rest reaches t (unrelated memories that
would get a notice).

Then three runs on stores of the set: ``baseline`` (everything added plainly, each question searched
hybrid k=5: is the newer fact first, is the old one in the top 5), ``supersede`` (newer facts added
with ``supersedes=<old id>``: the old one must not come back) and ``notice`` (newer facts added
plainly: does ``AddResult.similar`` name the old fact, does it fire on related memories). The last
two need ``Memories.add(..., supersedes=)`` and ``AddResult.similar``; without them they are skipped
with a note.
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import json
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import remem

DEFAULT_SET = Path(__file__).resolve().parent.parent / "tests" / "data" / "update_set.json"
THRESHOLDS = tuple(round(0.60 + 0.01 * i, 2) for i in range(36))  # 0.60 … 0.95
SEARCH_K = 5
#: How many sweep rows either side of the chosen threshold are printed (all with --all-rows).
ROWS_AROUND = 6
#: How many of the hardest cases of each kind are listed.
CASES = 8


@dataclass(frozen=True)
class Newer:
    """A newer memory of the set and what the notice sees when it is added."""

    kind: str  # "update" or "related"
    key: str
    phrasing: str  # an update's "close"/"reworded"; "related" for related pairs
    holdout: bool
    pair: float  # cosine with its own older memory (the old fact; the related pair's first)
    best: float  # best cosine against every other memory of the set
    best_is_pair: bool  # that best one is its own older memory
    best_label: str  # which memory that is, "<key>:<role>"


@dataclass(frozen=True)
class Row:
    """The notice at one threshold over one split of the set."""

    threshold: float
    recall: float
    false_alarms: float
    precision: float
    f1: float
    background: float


def labelled_texts(data: dict[str, Any]) -> list[tuple[str, str]]:
    """Every memory of the set as (label, text); label "<key>:<role>"."""
    texts = [(f"{u['key']}:old", u["old"]) for u in data["updates"]]
    texts += [(f"{u['key']}:new", u["new"]) for u in data["updates"]]
    texts += [(f"{r['key']}:first", r["first"]) for r in data["related"]]
    texts += [(f"{r['key']}:second", r["second"]) for r in data["related"]]
    texts += [(f"{b['key']}:background", b["text"]) for b in data["background"]]
    return texts


def cosines(windows: Sequence[np.ndarray[Any, Any]]) -> np.ndarray[Any, Any]:
    """The (n, n) matrix of each pair of texts' best window cosine (diagonal -inf)."""
    sizes = [w.shape[0] for w in windows]
    stacked = np.concatenate(windows).astype(np.float64)
    rows = stacked @ stacked.T
    spans = list(itertools.pairwise(np.cumsum([0, *sizes])))
    best = np.array([[rows[a:b, c:d].max() for c, d in spans] for a, b in spans])
    np.fill_diagonal(best, -np.inf)
    return best


def newer_memories(data: dict[str, Any], store: Path) -> list[Newer]:
    """Embed the whole set with the store's model and see each newer memory as the notice would."""
    labelled = labelled_texts(data)
    index = {label: i for i, (label, _) in enumerate(labelled)}
    with remem.open(store) as memories:
        embedder = memories.embedder()
        for note in memories.notes:  # which model the new store took, as the CLI says it
            print(note, file=sys.stderr)
        print(f"model: {embedder.info.name}", file=sys.stderr)
        windows = embedder.embed_documents([text for _, text in labelled]).windows
    sims = cosines(windows)

    def seen(kind: str, key: str, phrasing: str, holdout: bool, older: str, newer: str) -> Newer:
        row = sims[index[f"{key}:{newer}"]]
        top = int(np.argmax(row))
        return Newer(
            kind=kind,
            key=key,
            phrasing=phrasing,
            holdout=holdout,
            pair=float(row[index[f"{key}:{older}"]]),
            best=float(row[top]),
            best_is_pair=top == index[f"{key}:{older}"],
            best_label=labelled[top][0],
        )

    found = [seen("update", u["key"], u["phrasing"], u["holdout"], "old", "new") for u in data["updates"]]
    found += [seen("related", r["key"], "related", r["holdout"], "first", "second") for r in data["related"]]
    found += [
        Newer(
            "background",
            b["key"],
            "background",
            False,
            0.0,
            float(sims[index[f"{b['key']}:background"]].max()),
            False,
            "",
        )
        for b in data["background"]
    ]
    return found


def sweep(found: Sequence[Newer]) -> list[Row]:
    """The notice's recall, false alarms and precision at every threshold over ``found``."""
    updates = [n for n in found if n.kind == "update"]
    related = [n for n in found if n.kind == "related"]
    background = [n for n in found if n.kind == "background"]
    rows = []
    for t in THRESHOLDS:
        right = sum(n.best >= t and n.best_is_pair for n in updates)
        fired = sum(n.best >= t for n in updates) + sum(n.best >= t for n in related)
        recall = right / len(updates) if updates else 0.0
        precision = right / fired if fired else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        rows.append(
            Row(
                threshold=t,
                recall=recall,
                false_alarms=sum(n.best >= t for n in related) / len(related) if related else 0.0,
                precision=precision,
                f1=f1,
                background=sum(n.best >= t for n in background) / len(background) if background else 0.0,
            )
        )
    return rows


def print_store_threshold(
    cal: Sequence[Row], hold: Sequence[Row], every: Sequence[Row], chosen: float
) -> None:
    """The rows of the threshold remem uses (``SIMILAR_THRESHOLD``), when it is not the one chosen
    here (it fires on fewer related memories than the best F1 does: see ``remem.core.superseding``)."""
    try:
        from remem.core.superseding import SIMILAR_THRESHOLD
    except ImportError:  # a remem without the notice
        return
    used = round(SIMILAR_THRESHOLD, 2)
    if used == chosen:
        return
    for title, rows in (("calibration", cal), ("holdout", hold), ("all", every)):
        r = next((r for r in rows if r.threshold == used), None)
        if r is not None:
            print(
                f"remem's SIMILAR_THRESHOLD {used:.2f}, {title}: recall {r.recall:.2f}, "
                f"false alarms {r.false_alarms:.2f}, precision {r.precision:.2f}, F1 {r.f1:.2f}"
            )


def choose(rows: Sequence[Row]) -> Row:
    """The row of the best F1 (ties: fewest false alarms, then the highest threshold)."""
    return max(rows, key=lambda r: (round(r.f1, 9), -r.false_alarms, r.threshold))


def print_sweep(title: str, rows: Sequence[Row], chosen: float, all_rows: bool) -> None:
    """A markdown table of the sweep, the chosen threshold's row marked."""
    at = next(i for i, r in enumerate(rows) if r.threshold == chosen)
    shown = rows if all_rows else rows[max(0, at - ROWS_AROUND) : at + ROWS_AROUND + 1]
    print(f"\n{title}\n")
    print("| threshold | recall | false alarms | precision | F1 | bg fires |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in shown:
        mark = " ←" if r.threshold == chosen else ""
        print(
            f"| {r.threshold:.2f}{mark} | {r.recall:.2f} | {r.false_alarms:.2f} | {r.precision:.2f} | "
            f"{r.f1:.2f} | {r.background:.2f} |"
        )


def spread(values: Sequence[float]) -> str:
    """min / median / max of some cosines."""
    if not values:
        return "—"
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}"


def print_distribution(found: Sequence[Newer]) -> None:
    """The cosines of update and related pairs, and what the notice sees, by kind of pair."""
    print("\n| pairs | n | pair cosine min / median / max | best cosine min / median / max | top 1 is pair |")
    print("|---|---:|---|---|---:|")
    groups: list[tuple[str, Callable[[Newer], bool]]] = [
        ("update, close", lambda n: n.kind == "update" and n.phrasing == "close"),
        ("update, reworded", lambda n: n.kind == "update" and n.phrasing == "reworded"),
        ("update, all", lambda n: n.kind == "update"),
        ("related", lambda n: n.kind == "related"),
        ("background", lambda n: n.kind == "background"),
    ]
    for name, chosen in groups:
        group = [n for n in found if chosen(n)]
        pairs = spread([n.pair for n in group]) if group[0].kind != "background" else "—"
        top = (
            f"{sum(n.best_is_pair for n in group) / len(group):.2f}" if group[0].kind != "background" else "—"
        )
        print(f"| {name} | {len(group)} | {pairs} | {spread([n.best for n in group])} | {top} |")


def print_cases(found: Sequence[Newer], threshold: float) -> None:
    """The hardest cases: lowest update pairs, highest related ones, updates whose top 1 is another."""
    updates = sorted((n for n in found if n.kind == "update"), key=lambda n: n.pair)
    related = sorted((n for n in found if n.kind == "related"), key=lambda n: -n.best)
    print(f"\nlowest update pairs (notice at {threshold:.2f} misses those below):")
    for n in updates[:CASES]:
        print(f"  {n.pair:.3f} {n.key} ({n.phrasing}{', holdout' if n.holdout else ''})")
    print("highest related memories (best cosine; false alarms at or above the threshold):")
    for n in related[:CASES]:
        print(f"  {n.best:.3f} {n.key} → {n.best_label}{' (holdout)' if n.holdout else ''}")
    wrong = [n for n in updates if not n.best_is_pair]
    print(f"updates whose best match is not their old fact: {len(wrong)}")
    for n in wrong:
        print(f"  {n.key}: old {n.pair:.3f}, but {n.best_label} {n.best:.3f}")


# --- runs on stores ------------------------------------------------------------------------------


def has_feature() -> bool:
    """Whether this remem takes ``supersedes`` in ``Memories.add`` (and so reports ``similar``)."""
    return "supersedes" in inspect.signature(remem.Memories.add).parameters


def ranks(
    memories: remem.Memories, data: dict[str, Any], new_ids: dict[str, int], old_ids: dict[str, int]
) -> str:
    """Each update's question searched (hybrid, k=5): the newer fact first; the old one in the top 5."""
    first = old_seen = old_above = 0
    for u in data["updates"]:
        found = [hit.memory.id for hit in memories.search(u["question"], k=SEARCH_K, mode="hybrid")]
        first += bool(found) and found[0] == new_ids[u["key"]]
        old_seen += old_ids[u["key"]] in found
        new_at = found.index(new_ids[u["key"]]) if new_ids[u["key"]] in found else SEARCH_K
        old_above += old_ids[u["key"]] in found and found.index(old_ids[u["key"]]) < new_at
    n = len(data["updates"])
    return (
        f"newer hit@1 {first / n:.2f}, old in top {SEARCH_K} {old_seen}/{n}, old above newer {old_above}/{n}"
    )


def add_base(memories: remem.Memories, data: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """Add the background, the related pairs' first memories and the old facts: the ids of the old
    facts and of the first memories, by key."""
    for b in data["background"]:
        memories.add(b["text"])
    first_ids = {r["key"]: memories.add(r["first"]).id for r in data["related"]}
    return {u["key"]: memories.add(u["old"]).id for u in data["updates"]}, first_ids


def run_baseline(data: dict[str, Any], store: Path) -> None:
    """Everything added plainly (no supersede): where do the questions' answers rank?"""
    with remem.open(store) as memories:
        old_ids, _ = add_base(memories, data)
        for r in data["related"]:
            memories.add(r["second"])
        new_ids = {u["key"]: memories.add(u["new"]).id for u in data["updates"]}
        print(f"baseline (no supersede): {ranks(memories, data, new_ids, old_ids)}")


def run_supersede(data: dict[str, Any], store: Path) -> None:
    """Newer facts added with ``supersedes=<old id>``: the old facts must leave the results."""
    with remem.open(store) as memories:
        old_ids, _ = add_base(memories, data)
        for r in data["related"]:
            memories.add(r["second"])
        add: Callable[..., Any] = memories.add  # takes supersedes= once the core has it
        new_ids = {u["key"]: add(u["new"], supersedes=old_ids[u["key"]]).id for u in data["updates"]}
        print(f"supersede: {ranks(memories, data, new_ids, old_ids)} (must be 0)")


def run_notice(data: dict[str, Any], store: Path) -> None:
    """Newer facts added plainly: how often ``AddResult.similar`` names the old fact, or fires at all."""
    with remem.open(store) as memories:
        old_ids, first_ids = add_base(memories, data)
        named = top = fired_updates = 0
        for u in data["updates"]:
            similar: Sequence[Any] = getattr(memories.add(u["new"]), "similar", ())
            fired_updates += bool(similar)
            top += bool(similar) and similar[0].id == old_ids[u["key"]]
            named += any(s.id == old_ids[u["key"]] for s in similar)
        fired = named_first = 0
        for r in data["related"]:
            similar = getattr(memories.add(r["second"]), "similar", ())
            fired += bool(similar)
            named_first += any(s.id == first_ids[r["key"]] for s in similar)
    n, m = len(data["updates"]), len(data["related"])
    print(
        f"notice: updates fired {fired_updates}/{n}, named the old fact first {top}/{n} "
        f"(anywhere {named}/{n}); related fired {fired}/{m} (named the first {named_first}/{m})"
    )


def main() -> None:
    """Load the set, calibrate, print the tables, run the store runs the core supports."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument("--threshold", type=float, help="report this threshold instead of the chosen one")
    parser.add_argument("--all-rows", action="store_true", help="print every threshold of the sweep")
    args = parser.parse_args()
    data = json.loads(args.set.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        found = newer_memories(data, Path(tmp) / "vectors")
    calibration = [n for n in found if n.kind == "background" or not n.holdout]
    holdout = [n for n in found if n.kind == "background" or n.holdout]
    cal_rows, hold_rows, all_rows = sweep(calibration), sweep(holdout), sweep(found)
    chosen = choose(cal_rows).threshold if args.threshold is None else round(args.threshold, 2)
    count = {kind: sum(n.kind == kind for n in found) for kind in ("update", "related", "background")}
    held = {kind: sum(n.kind == kind and n.holdout for n in found) for kind in ("update", "related")}
    print(
        f"{count['update']} update pairs ({held['update']} holdout), {count['related']} related pairs "
        f"({held['related']} holdout), {count['background']} background memories"
    )
    print_distribution(found)
    print_sweep("calibration (holdout left out; the threshold chosen here)", cal_rows, chosen, args.all_rows)
    print_sweep("holdout", hold_rows, chosen, args.all_rows)
    for title, rows in (("calibration", cal_rows), ("holdout", hold_rows), ("all", all_rows)):
        r = next(r for r in rows if r.threshold == chosen)
        print(
            f"\n{title} at {chosen:.2f}: recall {r.recall:.2f}, false alarms {r.false_alarms:.2f}, "
            f"precision {r.precision:.2f}, F1 {r.f1:.2f}, background fires {r.background:.2f}",
            end="",
        )
    print()
    print_store_threshold(cal_rows, hold_rows, all_rows, chosen)
    print_cases(found, chosen)
    print()
    with tempfile.TemporaryDirectory() as tmp:
        run_baseline(data, Path(tmp) / "baseline")
        if not has_feature():
            print("supersede, notice: skipped (Memories.add takes no supersedes= in this remem)")
            return
        run_supersede(data, Path(tmp) / "supersede")
        run_notice(data, Path(tmp) / "notice")


if __name__ == "__main__":
    main()
