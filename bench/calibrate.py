"""Fit the calibrated score (issue #48): the map from what a search ranks by to a relevance in [0, 1].

    python bench/calibrate.py [--model NAME] [--scifact DIR] [--locomo DIR] [--stores DIR] [--save FILE]
                              [--quick]
    python bench/calibrate.py --load FILE      (fit and print again from the hits a run saved)

Builds (or, with ``--stores``, reuses: ``DIR/MODEL/scifact`` and ``DIR/MODEL/locomo``) a store of
SciFact, of LoCoMo and of the memory-shaped set through the public API, as bench/beir.py,
bench/locomo.py and bench/memory_set.py do (their own functions), with the model ``--model`` names
(``remem.open(model=)``; default the bundled all-minilm-l6-v2; another must be installed, ``remem
model pull``; a kept store of another model is refused), and asks every query in each mode (hybrid,
vector, keyword) with each benchmark's own arguments (SciFact k=100, LoCoMo k=10 within the
conversation, the memory set k=3 of 63 memories: its whole top is read). Each hit of a query's top
10 is recorded with its calibration's terms (``Hit.calibration``: the ranking score in each lane's
units) and whether it is relevant (SciFact: judged relevant; LoCoMo: a turn of the question's
evidence; memory set: the answer).

The queries are split into a tuning and a held-out half (seed 31; LoCoMo by conversation, the others
by query, as bench/fusion_lab.py splits them). On the tuning halves, one logistic regression per
mode (every hit alike, weights kept ≥ 0 so the map is monotone) gives the constants of
``remem.core.search.calibration``. On the held-out halves it prints the reliability table per corpus
and pooled: bins of 0.2 of the shown score (the fitted map, never rising down a query's list), the
hits in each and the share relevant. The baseline in the same run is the map search ships for that
model (``calibration.maps_for``: the bundled model's maps for a model without its own): its table,
and how far its scores are from the fitted map's. A saved file names its model (``--load`` of a file
saved before it did: ``--model`` says which). It also prints each benchmark's quality from the same
searches (SciFact nDCG@10, LoCoMo R@10, memory-set hit@1), which the map cannot change: it never
reorders.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

import _harness
import beir
import locomo
import memory_set
import remem
from remem.core.search import calibration
from remem.embedders.registry import BUNDLED_MODEL

SEED = 31
MODES = (remem.SearchMode.HYBRID, remem.SearchMode.VECTOR, remem.SearchMode.KEYWORD)
TOP = 10
BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


@dataclass(frozen=True)
class Asked:
    """One query in one mode: its corpus, the key the split draws (a query or a conversation), each
    of its top hits' (cosine term, keyword term, relevant), best first, and its benchmark's quality."""

    corpus: str
    key: str
    mode: remem.SearchMode
    hits: list[tuple[float, float, bool]]
    quality: float


def terms(hit: remem.Hit) -> tuple[float, float]:
    """A hit's calibration terms."""
    assert hit.calibration is not None
    return hit.calibration.cosine, hit.calibration.keyword


def scifact(memories: remem.Memories, data: Path, quick: bool) -> Iterator[Asked]:
    """Every SciFact test query in each mode (``beir``: the store, its documents, the metric)."""
    dataset = beir.load_dataset(data)
    if quick:
        dataset = beir.quick_subset(dataset)
    embedder = memories.embedder()
    beir.ingest(memories, beir.TimedEmbedder(embedder), dataset.docs, 256)
    mapping = beir.memory_to_docs(memories, dataset.docs)
    for qid, text in dataset.queries.items():
        qrels = dataset.qrels[qid]
        for mode in MODES:
            found = memories.search(text, k=beir.TOP_K, mode=mode)
            docs = [doc for hit in found for doc in mapping.get(hit.memory.id, [])]
            relevant = [any(qrels.get(d, 0) > 0 for d in mapping.get(h.memory.id, [])) for h in found]
            hits = [(*terms(hit), rel) for hit, rel in zip(found[:TOP], relevant, strict=False)]
            yield Asked("scifact", qid, mode, hits, beir.ndcg_at_k(docs, qrels, 10))


def conversations(memories: remem.Memories, data: Path, quick: bool) -> Iterator[Asked]:
    """Every LoCoMo question of categories 1–4 with evidence in each mode (``locomo``)."""
    loaded = locomo.load(data)
    if quick:
        name, first = next(iter(loaded.items()))
        loaded = {name: {**first, "qa": first["qa"][:20]}}
    locomo.ingest(memories, loaded)
    for name, conversation in loaded.items():
        for number, qa in enumerate(conversation["qa"]):
            evidence = set(qa.get("evidence") or [])
            if qa.get("category") not in locomo.CATEGORIES or not evidence:
                continue
            for mode in MODES:
                found = memories.search(str(qa["question"]), k=locomo.K, mode=mode, conversation=name)
                marks = [hit.memory.meta.get("dia_id") in evidence for hit in found]
                recall = len({h.memory.meta.get("dia_id") for h in found} & evidence) / len(evidence)
                hits = [(*terms(hit), rel) for hit, rel in zip(found[:TOP], marks, strict=True)]
                key = name if not quick else f"{name}#{number}"
                yield Asked("locomo", key, mode, hits, recall)


def memory_shaped(memories: remem.Memories) -> Iterator[Asked]:
    """Every query of the memory-shaped set in each mode (``memory_set``: its memories, dated
    relative to now)."""
    data = json.loads(memory_set.DEFAULT_SET.read_text())
    now = datetime.now().astimezone()
    ids = {
        m["key"]: memories.add(m["text"], created_at=memory_set.created_at(m.get("when"), now)).id
        for m in data["memories"]
    }
    for number, query in enumerate(data["queries"]):
        for mode in MODES:
            found = memories.search(query["text"], k=3, mode=mode)
            answer = ids[query["answer"]]
            hits = [(*terms(hit), hit.memory.id == answer) for hit in found[:TOP]]
            yield Asked(
                "memory", str(number), mode, hits, float(bool(found) and found[0].memory.id == answer)
            )


def halves(asked: Sequence[Asked]) -> dict[str, set[tuple[str, str]]]:
    """The (corpus, key) pairs of the tuning and the held-out half of each corpus (seed ``SEED``)."""
    split: dict[str, set[tuple[str, str]]] = {"tune": set(), "hold": set()}
    for corpus in sorted({a.corpus for a in asked}):
        keys = sorted({a.key for a in asked if a.corpus == corpus})
        random.Random(SEED).shuffle(keys)
        split["tune"] |= {(corpus, key) for key in keys[: len(keys) // 2]}
        split["hold"] |= {(corpus, key) for key in keys[len(keys) // 2 :]}
    return split


def logistic(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted logistic regression by Newton's method (a little ridge for stability): the
    coefficients of ``x``'s columns."""
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(x @ beta, -30, 30)))
        gradient = x.T @ (weights * (y - p)) - 1e-4 * beta
        hessian = (x * (weights * p * (1 - p))[:, None]).T @ x + 1e-4 * np.eye(x.shape[1])
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.abs(step).max() < 1e-9:
            break
    return beta


def fit(asked: Sequence[Asked], mode: remem.SearchMode) -> calibration.Map:
    """The mode's map fitted on every hit of ``asked`` alike (the pooled set the tables judge): the
    cosine term, the keyword term, −ln(rank); a term whose weight would be negative (the map no
    longer monotone) is left out and the rest fitted again."""
    rows = [
        (cosine, keyword, -math.log(rank), relevant)
        for a in asked
        if a.mode is mode
        for rank, (cosine, keyword, relevant) in zip(ranks(a.hits), a.hits, strict=True)
    ]
    y = np.array([float(r[3]) for r in rows])
    used = {"hybrid": [0, 1, 2], "vector": [0, 2], "keyword": [1, 2]}[mode.value]
    while True:
        x = np.array([[r[i] for i in used] + [1.0] for r in rows])
        beta = logistic(x, y, np.ones(len(rows)))
        negative = [i for i, b in zip(used, beta, strict=False) if b < 0]
        if not negative:
            break
        used = [i for i in used if i not in negative]
    found = {i: float(b) for i, b in zip(used, beta, strict=False)}
    return calibration.Map(found.get(0, 0.0), found.get(1, 0.0), found.get(2, 0.0), float(beta[-1]))


def ranks(hits: Sequence[tuple[float, float, bool]]) -> list[float]:
    """The hits' ranks as search gives them (``calibration.places``: a tie shares its mean place): both
    terms are affine in the ranking score within a search, so their sum ties where it does."""
    return calibration.places([cosine + keyword for cosine, keyword, _ in hits])


def shown(chosen: calibration.Map, hits: Sequence[tuple[float, float, bool]]) -> list[float]:
    """The scores a query's hits show under ``chosen`` (never rising down the list)."""
    return calibration.non_increasing(
        [chosen.relevance(c, k, n) for n, (c, k, _) in zip(ranks(hits), hits, strict=True)]
    )


def reliability(asked: Sequence[Asked], maps: dict[remem.SearchMode, calibration.Map]) -> list[list[int]]:
    """Per bin of 0.2: [hits, relevant ones], over every mode."""
    table = [[0, 0] for _ in BINS[:-1]]
    for a in asked:
        for score, (_, _, relevant) in zip(shown(maps[a.mode], a.hits), a.hits, strict=True):
            place = min(int(score / 0.2), len(table) - 1)
            table[place][0] += 1
            table[place][1] += relevant
    return table


def print_tables(asked: Sequence[Asked], maps: dict[remem.SearchMode, calibration.Map], title: str) -> None:
    """The reliability table per corpus and pooled (every mode)."""
    groups = {c: [a for a in asked if a.corpus == c] for c in ("scifact", "locomo", "memory")}
    groups["pooled"] = list(asked)
    made = {name: reliability(group, maps) for name, group in groups.items()}
    rows = [
        [f"{low:.1f}–{high:.1f}"]
        + [f"{n} / {(rel / n if n else math.nan):.2f}" for n, rel in (made[g][i] for g in made)]
        for i, (low, high) in enumerate(itertools.pairwise(BINS))
    ]
    _harness.table(["score", *(f"{g}: hits / share relevant" for g in made)], rows, title)


@contextmanager
def opened(directory: Path, model: str) -> Iterator[remem.Memories]:
    """The store in ``directory`` (made with ``model`` when new); SystemExit if it holds another
    model's vectors (a kept store of another run)."""
    with remem.open(directory, model=model) as memories:
        held = memories.embedder().info.name
        if held != model:
            raise SystemExit(f"Error: the store {directory} holds {held}'s vectors, not {model}'s")
        yield memories


def collect(args: Any, stores: Path) -> list[Asked]:
    """Every corpus's queries in every mode, with ``args.model`` (stores under ``stores``/model; the
    memory set's is new)."""
    asked: list[Asked] = []
    with opened(stores / args.model / "scifact", args.model) as memories:
        asked += scifact(memories, args.scifact, args.quick)
    _harness.note("scifact done")
    with opened(stores / args.model / "locomo", args.model) as memories:
        asked += conversations(memories, args.locomo, args.quick)
    _harness.note("locomo done")
    with tempfile.TemporaryDirectory() as tmp, opened(Path(tmp) / "memory", args.model) as memories:
        asked += memory_shaped(memories)
    return asked


def load(path: Path, model: str) -> tuple[str, list[Asked]]:
    """The model and every query's hits a run saved (a file saved before runs named their model:
    ``model``'s)."""
    saved = json.loads(path.read_text())
    if isinstance(saved, dict):
        model, saved = saved["model"], saved["asked"]
    asked = [
        Asked(c, k, remem.SearchMode(m), [(float(x), float(y), bool(r)) for x, y, r in hits], q)
        for c, k, m, hits, q in saved
    ]
    return model, asked


def main() -> None:
    """Collect, split, fit, print the constants, the tables and the benchmarks' quality."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--model", default=BUNDLED_MODEL.name, help="model name (default: %(default)s)")
    parser.add_argument("--scifact", type=Path, default=_harness.SHARED / "scifact")
    parser.add_argument("--locomo", type=Path, default=_harness.SHARED / "locomo")
    parser.add_argument(
        "--stores", type=Path, help="keep (or reuse) the SciFact and LoCoMo stores here, per model"
    )
    parser.add_argument("--save", type=Path, help="also write every query's hits to this JSON file")
    parser.add_argument("--load", type=Path, help="read the hits a run saved instead of searching")
    args = parser.parse_args()
    print(_harness.machine())
    model = args.model
    if args.load:
        model, asked = load(args.load, model)
    else:
        with tempfile.TemporaryDirectory(prefix="remem-calibrate-") as tmp:
            asked = collect(args, args.stores or Path(tmp))
    if args.save:
        rows = [[a.corpus, a.key, a.mode.value, a.hits, a.quality] for a in asked]
        args.save.write_text(json.dumps({"model": model, "asked": rows}))
    print(f"model: {model}")
    split = halves(asked)
    tune = [a for a in asked if (a.corpus, a.key) in split["tune"]]
    hold = [a for a in asked if (a.corpus, a.key) in split["hold"]]
    fitted = {mode: fit(tune, mode) for mode in MODES}
    print(f"\nqueries × modes: {len(tune)} tuning, {len(hold)} held out (seed {SEED})")
    for mode, found in fitted.items():
        print(
            f"  {mode.value}: Map(cosine={found.cosine:.3f}, keyword={found.keyword:.3f}, "
            f"rank={found.rank:.3f}, bias={found.bias:.3f})"
        )
    print_tables(hold, fitted, "\nheld-out halves, the fitted map (every mode):")
    for mode in MODES:
        print_tables([a for a in hold if a.mode is mode], fitted, f"\nheld-out halves, {mode.value}:")
    shipped = calibration.maps_for(model)
    own = "its own" if model in calibration.MAPS else "the bundled model's"
    print_tables(
        hold, shipped, f"\nbaseline: held-out halves, the map search ships for {model} ({own}, maps_for):"
    )
    apart = max(
        (
            abs(x - y)
            for a in asked
            for x, y in zip(shown(fitted[a.mode], a.hits), shown(shipped[a.mode], a.hits), strict=True)
        ),
        default=0.0,
    )
    print(f"\nlargest difference between the fitted and the shipped map's scores: {apart:.4f}")
    quality = defaultdict(list)
    for a in asked:
        quality[(a.corpus, a.mode.value)].append(a.quality)
    rows = [[c, m, f"{np.mean(v):.4f}", len(v)] for (c, m), v in sorted(quality.items())]
    _harness.table(
        ["corpus", "mode", "nDCG@10 / R@10 / hit@1", "queries"], rows, "\nquality (order unchanged):"
    )


if __name__ == "__main__":
    main()
