"""Fusion lab (issue #31): dump each hybrid query's candidate pool once, then try fusion rules offline.

    python bench/fusion_lab.py dump --corpus scifact|locomo|memory|cjk[-e5]
        [--data DIR] [--lab /tmp/fusionlab] [--models-dir DIR]
    python bench/fusion_lab.py eval [--lab /tmp/fusionlab] [--grid]
    python bench/fusion_lab.py --quick      (dump the memory-shaped set to a temporary lab, eval it)

``dump`` builds (or reuses) the corpus's store under ``--lab`` with the bundled model (a corpus named
``…-e5``: multilingual-e5-small, from ``--models-dir``) and runs every query through
``Memories.search`` in hybrid mode with the benchmark's own arguments (SciFact k=100, LoCoMo k=10
within the conversation with ``dates=False``, the memory-shaped set and the CJK set k=3). Around the
real ``remem.core.search.pool.gather`` it records, for each query, the pool search ranked (what
``fuse.rank`` reads of each candidate), and a pool twice as deep as hybrid's (each
lane's top 2 × depth, the vector lane's by the vector the search embedded): per memory its
best-window cosine and every window's cosine, its vector rank, its BM25 score and keyword rank
(ungated), the share of the query's IDF weight it covers, whether it holds the query as a phrase,
whether it is in the query's script, its conversation, user, created_at and role if it has a
conversation; the query's whole IDF weight and the speakers it names (whom its vector was embedded
without); and the ranking search returned. One JSON file per corpus, ``<lab>/<corpus>.json``.

``eval`` re-fuses the dumps with the rule search used before issue #31 (``Rrf``: RRF_K=10, the
coverage gate, phrase bonus) and with the rule it uses now (``Shipped``: ``fuse.fused``'s z-scores
with weak matches counted in proportion and floored spreads, then ``sessions``' lift of a
conversation's turns by their session mates), and checks that one of them reproduces the rankings
the dump recorded (a dump made before the change reproduces the first). It then scores
every variant on a tuning half and a held-out half of each corpus (seed 31: SciFact and the memory
set split by query, LoCoMo by conversation) and prints one table: SciFact nDCG@10, LoCoMo evidence
recall@10, memory-set hit@1, and, never tuned on, the CJK set's hit@1 (``cjk``: bundled model;
``cjk-e5``: multilingual-e5-small) where dumped.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import _harness

LAB = Path("/tmp/fusionlab")
DATA = {"scifact": _harness.SHARED / "scifact", "locomo": _harness.SHARED / "locomo"}
SEED = 31

# --- dumping -------------------------------------------------------------------------------------


@functools.cache
def keyword_counts() -> Any:
    """The lab's own count of each term's holders, kept per state of the store's keyword index (the
    same counts the store keeps for itself, so shares and IDFs are those search computes)."""
    from remem.backends.local import keywords

    return keywords.KeywordCounts()


def coverage_shares(backend: Any, text: str, ids: Sequence[int]) -> tuple[dict[int, float], float]:
    """Each memory's exact share of the query's IDF weight (``keywords.coverage``, uncapped), and
    that whole weight."""
    from remem.backends.analyzer import term_queries
    from remem.backends.local import fts

    conn, counts = backend.records.conn, keyword_counts()
    stamp, total = counts.stamp(conn), fts.row_count(conn)
    own = [f"terms : {term}" for term in term_queries(text)]
    held = [counts.holders(conn, stamp, match) for match in own]
    weights = [math.log(1 + (total - n + 0.5) / (n + 0.5)) for n in held]
    whole = sum(weights) or 1.0
    got = dict.fromkeys(ids, 0.0)
    for match, n, weight in zip(own, held, weights, strict=True):
        holding = fts.present(conn, ids) if n >= total else fts.members(conn, match, n, ids)
        for mid in holding:
            got[mid] += weight
    return {mid: share / whole for mid, share in got.items()}, sum(weights)


def term_stats(backend: Any, text: str, ids: Sequence[int]) -> dict:
    """What BM25 with other k1 and b needs: each term's IDF, each memory's instances of each term
    (own, context columns) and length in tokens, the mean length (``bm25.score``'s inputs)."""
    from remem.backends.local import bm25, fts, keywords

    conn, counts = backend.records.conn, keyword_counts()
    terms = keywords.term_queries(text)
    rows, columns = fts.averages(conn)
    context = len(columns) > 1 and columns[1] > 0
    found = [bm25.instances(conn, term, list(ids), context) if ids else ({}, {}) for term in terms]
    sizes = {mid: size for _, part in found for mid, size in part.items()}
    stamp = counts.stamp(conn)
    return {
        "idf": [bm25.idf(rows, counts.holders(conn, stamp, term)) for term in terms],
        "tf": [[list(part.get(mid, (0, 0))) for part, _ in found] for mid in ids],
        "size": [sizes.get(mid, 0) for mid in ids],
        "mean": max(sum(columns), 1) / max(rows, 1),
    }


def window_cosines(backend: Any, vector: Any, ids: Sequence[int]) -> dict[int, list[float]]:
    """Every window's cosine, in window order, for each memory."""
    found = backend.vectors_of_memories(ids)
    return {
        mid: (np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1) @ vector).tolist()
        for mid, blobs in found.items()
    }


def pool_of(backend: Any, lane: Any, query: Any, vector: Any, k: int, filters: Any, among: Any) -> dict:
    """The deep pool of one hybrid query (see the module docstring)."""
    from remem.core import scripts
    from remem.core.search import speakers
    from remem.core.search.pool import MIN_HYBRID_DEPTH

    depth = 2 * max(MIN_HYBRID_DEPTH, 4 * k)
    by_keyword = backend.keyword_top(query.text, filters, depth, among)
    named = speakers.named(query.names, backend.turn_times([mid for mid, _ in by_keyword[: depth // 2]]))
    # the vector lane's top (only ``among`` if given), as the search's pool takes it
    by_vector = lane.top(vector, depth, filters) if among is None else lane.cosines(vector, among)[:depth]
    ids = list(dict.fromkeys([mid for mid, _ in by_vector] + [mid for mid, _ in by_keyword]))
    cosines = dict(lane.cosines(vector, ids))
    bm25 = dict(backend.keyword_top(query.text, filters, len(ids), among=ids))
    shares, weight = coverage_shares(backend, query.text, ids)
    windows = window_cosines(backend, vector, ids)
    texts = backend.texts(ids)
    vrank = {mid: place for place, (mid, _) in enumerate(by_vector, start=1)}
    krank = {mid: place for place, (mid, _) in enumerate(by_keyword, start=1)}
    cjk = scripts.is_cjk(query.text)
    return {
        "depth": depth // 2,
        "weight": weight,
        "blind": query.blind_across_scripts,
        "ids": ids,
        "cos": [cosines[m] for m in ids],
        "windows": [windows.get(m, [cosines[m]]) for m in ids],
        "vrank": [vrank.get(m, 0) for m in ids],
        "bm25": [bm25.get(m, float("nan")) for m in ids],
        "krank": [krank.get(m, 0) for m in ids],
        "share": [shares[m] for m in ids],
        "phrase": [query.phrases.matches(texts.get(m, "")) for m in ids],
        "allowed": [query.phrases.allows(texts.get(m, "")) for m in ids],
        "script": [scripts.is_cjk(texts.get(m, "")) == cjk for m in ids],
        "turns": {str(mid): list(turn) for mid, turn in backend.turn_times(ids).items()},
        "speakers": sorted(named),
    } | term_stats(backend, query.text, ids)


def product_pool(pool: Any) -> dict:
    """The pool search itself ranked (``remem.core.search.pool.Pool``) as JSON: what ``fuse.rank``
    reads, so that ``eval`` replays it through the product's own function."""
    lane = lambda found: None if found is None else [found.rank, found.score]  # noqa: E731
    turn = lambda c: None if c.turn is None else list(c.turn)  # noqa: E731
    return {
        "weight": pool.weight,
        "speakers": sorted(pool.speakers),
        "windowed": pool.windowed,
        "candidates": [
            [c.id, lane(c.vector), lane(c.keyword), c.share, turn(c), c.unread, c.in_window, c.phrase]
            for c in pool.candidates
        ],
    }


def replayed(record: dict, n: int) -> list[int]:
    """The ``n`` best ids of a dumped product pool, ranked by the product's ``fuse.rank``."""
    from remem.backends.base import TurnTime
    from remem.core.search import fuse
    from remem.core.search.pool import Candidate, Pool
    from remem.types import Lane, SearchMode

    lane = lambda found: None if found is None else Lane(*found)  # noqa: E731
    candidates = tuple(
        Candidate(mid, lane(v), lane(kw), share, None if turn is None else TurnTime(*turn), *flags)
        for mid, v, kw, share, turn, *flags in record["candidates"]
    )
    pool = Pool(candidates, record["weight"], frozenset(record["speakers"]), record["windowed"])
    return [r.id for r in fuse.rank(pool, SearchMode.HYBRID)][:n]


class Recorder:
    """Wraps the search's ``pool.gather``: each hybrid search's own pool (``product_pool``), the
    deep pool beside it (``pool_of``) and the seconds the real gathering took."""

    def __init__(self) -> None:
        """Patch remem.core.search.pool.gather (for this process)."""
        from remem.backends.pooling import holders
        from remem.core.search import pool as pooling
        from remem.types import SearchMode

        self.pools: list[dict] = []
        original = pooling.gather

        def wrapper(asked, query, mode):  # type: ignore[no-untyped-def]
            if mode is not SearchMode.HYBRID:
                return original(asked, query, mode)
            vectors = []

            def embedding(text):  # type: ignore[no-untyped-def]
                vectors.append(asked.embed(text))
                return vectors[-1]

            started = time.perf_counter()
            found = original(dataclasses.replace(asked, embed=embedding), query, mode)
            seconds = time.perf_counter() - started
            wanted = query.phrases
            held = (
                holders(asked.backend, wanted.required_words, wanted.allows, asked.filters)
                if wanted.required
                else None
            )
            among = None if held is None else list(held)
            lane = asked.backend.vector_lane(asked.model)
            deep = pool_of(asked.backend, lane, query, vectors[-1], asked.k, asked.filters, among)
            self.pools.append(deep | {"ms": seconds * 1000, "product": product_pool(found)})
            return found

        pooling.gather = wrapper

    def take(self) -> dict | None:
        """The pool of the last search (None if it never gathered a hybrid pool)."""
        return self.pools.pop() if self.pools else None


def corpus_model(corpus: str, models_dir: Path | None) -> Any:
    """The embedder a corpus is dumped with: multilingual-e5-small for ``…-e5`` (from ``models_dir``),
    else the bundled model."""
    import remem
    from remem.embedders.registry import BUNDLED_MODEL

    name = "multilingual-e5-small" if corpus.endswith("-e5") else BUNDLED_MODEL.name
    return remem.model_catalog(models_dir=models_dir).load(name, verify=True)


def dump_scifact(
    data: Path, lab: Path, recorder: Recorder, corpus: str, models_dir: Path | None
) -> list[dict]:
    """Every SciFact test query: its pool, its relevant docs, the returned memories."""
    import beir
    import remem

    dataset = beir.load_dataset(data)
    embedder = beir.TimedEmbedder(corpus_model(corpus, models_dir))
    records = []
    with remem.open(lab / corpus, embedder=embedder) as memories:
        beir.ingest(memories, embedder, dataset.docs, 256)
        mapping = beir.memory_to_docs(memories, dataset.docs)
        for qid, text in dataset.queries.items():
            hits = memories.search(text, k=beir.TOP_K, mode="hybrid")
            pool = recorder.take() or {}
            docs = {str(mid): mapping[mid] for mid in pool.get("ids", [])}
            records.append(
                pool
                | {"qid": qid, "docs": docs, "qrels": dataset.qrels[qid], "real": [h.memory.id for h in hits]}
            )
    return records


def dump_locomo(
    data: Path, lab: Path, recorder: Recorder, corpus: str, models_dir: Path | None
) -> list[dict]:
    """Every LoCoMo question of categories 1–4 with evidence: its pool, evidence, returned memories."""
    import locomo
    import remem

    conversations = locomo.load(data)
    records = []
    with remem.open(lab / corpus, embedder=corpus_model(corpus, models_dir)) as memories:
        locomo.ingest(memories, conversations)
        dia = {m.id: m.meta.get("dia_id") for m in memories.iter()}
        for name, conversation in conversations.items():
            for qa in conversation["qa"]:
                evidence = qa.get("evidence") or []
                if qa.get("category") not in locomo.CATEGORIES or not evidence:
                    continue
                hits = memories.search(
                    str(qa["question"]), k=locomo.K, mode="hybrid", conversation=name, dates=False
                )
                pool = recorder.take() or {}
                rel = [mid for mid in pool.get("ids", []) if dia[mid] in evidence]
                records.append(
                    pool
                    | {
                        "conv": name,
                        "evidence": len(set(evidence)),
                        "rel": rel,
                        "real": [h.memory.id for h in hits],
                    }
                )
    return records


def ask_each(memories: Any, recorder: Recorder, queries: list[dict], ids: dict[str, int]) -> list[dict]:
    """Search each query of a set whose answer is one memory (hybrid, k=3): its pool, kind, answer
    and the returned memories."""
    records = []
    for number, query in enumerate(queries):
        hits = memories.search(query["text"], k=3, mode="hybrid")
        pool = recorder.take() or {}
        records.append(
            pool
            | {"qid": number, "kind": query["kind"], "answer": ids[query["answer"]]}
            | {"real": [h.memory.id for h in hits]}
        )
    return records


def dump_memory(lab: Path, recorder: Recorder, corpus: str, models_dir: Path | None) -> list[dict]:
    """Every query of the memory-shaped set (a fresh store: its dates are relative to now)."""
    import shutil
    from datetime import datetime

    import memory_set
    import remem

    data = json.loads(memory_set.DEFAULT_SET.read_text())
    shutil.rmtree(lab / corpus, ignore_errors=True)
    now = datetime.now().astimezone()
    with remem.open(lab / corpus, embedder=corpus_model(corpus, models_dir)) as memories:
        ids = {
            m["key"]: memories.add(m["text"], created_at=memory_set.created_at(m.get("when"), now)).id
            for m in data["memories"]
        }
        return ask_each(memories, recorder, data["queries"], ids)


def dump_cjk(lab: Path, recorder: Recorder, corpus: str, models_dir: Path | None) -> list[dict]:
    """Every query of the CJK set (bench/cjk.py) with the bundled model (``cjk``) or
    multilingual-e5-small (``cjk-e5``, from ``models_dir``), k=3, on a fresh store."""
    import shutil

    import cjk
    import remem

    data = json.loads(cjk.DEFAULT_SET.read_text())
    shutil.rmtree(lab / corpus, ignore_errors=True)
    with remem.open(lab / corpus, embedder=corpus_model(corpus, models_dir)) as memories:
        ids = {m["key"]: memories.add(m["text"]).id for m in data["memories"]}
        return ask_each(memories, recorder, data["queries"], ids)


def dump(corpus: str, data: Path | None, lab: Path, models_dir: Path | None = None) -> None:
    """Write ``<lab>/<corpus>.json``."""
    lab.mkdir(parents=True, exist_ok=True)
    recorder = Recorder()
    started = time.perf_counter()
    if corpus.startswith("scifact"):
        records = dump_scifact(data or DATA["scifact"], lab, recorder, corpus, models_dir)
    elif corpus.startswith("locomo"):
        records = dump_locomo(data or DATA["locomo"], lab, recorder, corpus, models_dir)
    elif corpus.startswith("cjk"):
        records = dump_cjk(lab, recorder, corpus, models_dir)
    else:
        records = dump_memory(lab, recorder, corpus, models_dir)
    (lab / f"{corpus}.json").write_text(json.dumps(records))
    print(f"{corpus}: {len(records)} queries dumped in {time.perf_counter() - started:.0f} s")


# --- offline fusion ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pool:
    """One query's dumped pool as arrays (see ``pool_of``) and what counts as relevant."""

    corpus: str
    key: str  # the query (SciFact, memory set) or conversation (LoCoMo) the split draws
    depth: int
    blind: bool
    ids: np.ndarray
    cos: np.ndarray
    windows: list[np.ndarray]
    vrank: np.ndarray
    bm25: np.ndarray
    krank: np.ndarray
    share: np.ndarray
    phrase: np.ndarray
    allowed: np.ndarray
    script: np.ndarray
    real: list[int]
    record: dict


def load_pools(lab: Path, corpus: str) -> list[Pool]:
    """The dumped pools of a corpus."""
    pools = []
    for rec in json.loads((lab / f"{corpus}.json").read_text()):
        key = str(rec.get("conv", rec.get("qid")))
        if "ids" not in rec:
            rec |= {"ids": [], "cos": [], "windows": [], "vrank": [], "bm25": [], "krank": []}
            rec |= {"share": [], "phrase": [], "allowed": [], "script": [], "depth": 0, "blind": False}
        arrays = {
            name: np.asarray(rec[name], dtype=float)
            for name in ("ids", "cos", "vrank", "bm25", "krank", "share")
        }
        flags = {name: np.asarray(rec[name], dtype=bool) for name in ("phrase", "allowed", "script")}
        windows = [np.asarray(w, dtype=float) for w in rec["windows"]]
        pools.append(
            Pool(
                corpus,
                key,
                rec["depth"],
                rec["blind"],
                **arrays,
                **flags,
                windows=windows,
                real=rec["real"],
                record=rec,
            )
        )
    return pools


def order(pool: Pool, keys: Sequence[np.ndarray]) -> np.ndarray:
    """Indices sorted by ``keys`` (lexsort: the last key is primary), ties by smaller id."""
    return np.lexsort((pool.ids, *keys))


def lane_positions(pool: Pool, members: np.ndarray, first: np.ndarray, score: np.ndarray) -> np.ndarray:
    """1-based place of each member in a lane listing ``first`` members before the rest, each part
    by score descending then id; 0 for non-members."""
    idx = order(pool, (-score, ~first))
    idx = idx[members[idx]]
    places = np.zeros(len(pool.ids), dtype=float)
    places[idx] = np.arange(1, len(idx) + 1)
    return places


@dataclass(frozen=True)
class Lanes:
    """A pool cut to a depth: who is in it, the vector lane's places, the keyword lane's places."""

    inside: np.ndarray
    vplace: np.ndarray
    kplace: np.ndarray
    matched: np.ndarray


def lanes(pool: Pool, depth_factor: float = 1.0, gate: float = 0.2) -> Lanes:
    """Today's pool (``hybrid_rank``) at ``depth_factor`` × hybrid's depth with a coverage ``gate``."""
    depth = pool.depth * depth_factor
    in_v = (pool.vrank > 0) & (pool.vrank <= depth)
    matched = ~np.isnan(pool.bm25) & (pool.share >= gate - 1e-12)
    in_k = (pool.krank > 0) & (pool.krank <= depth) & matched
    inside = (in_v | in_k) & pool.allowed
    vplace = lane_positions(pool, inside, in_v, pool.cos)
    if pool.blind:
        vplace = lane_positions(pool, inside, pool.script, -vplace)
    kplace = lane_positions(pool, inside & matched, in_k, np.nan_to_num(pool.bm25, nan=-1e9))
    return Lanes(inside, vplace, kplace, inside & matched)


def ranked_ids(pool: Pool, inside: np.ndarray, score: np.ndarray, n: int) -> list[int]:
    """The best ``n`` members by score, ties by the better cosine, then the smaller id."""
    idx = order(pool, (-pool.cos, -score))
    return [int(pool.ids[i]) for i in idx if inside[i]][:n]


def rrf(
    pool: Pool, n: int, k: float = 10, gate: float = 0.2, depth: float = 1.0, wv: float = 1.0
) -> list[int]:
    """The rule before issue #31: RRF of the two lanes' places plus the phrase bonus."""
    cut = lanes(pool, depth, gate)
    score = wv / (k + cut.vplace) + np.where(cut.kplace > 0, 1 / (k + cut.kplace), 0.0)
    score = score + np.where(pool.phrase, (1 + wv) / (k + 1), 0.0)
    return ranked_ids(pool, cut.inside, score, n)


# --- metrics -------------------------------------------------------------------------------------

Rule = Callable[[Pool, int], list[int]]
DEPTH = {"scifact": 20, "locomo": 10, "memory": 3, "cjk": 3} | {
    "cjk-e5": 3,
    "scifact-e5": 20,
    "locomo-e5": 10,
}
DEPTH["memory-e5"] = 3  # memories each metric needs


def quality(pool: Pool, ranked: Sequence[int]) -> float:
    """SciFact nDCG@10, LoCoMo evidence recall@10 or memory-set hit@1 of one ranking."""
    import beir

    rec = pool.record
    if pool.corpus.startswith("scifact"):
        docs = [doc for mid in ranked for doc in sorted(rec["docs"].get(str(mid), []), reverse=True)]
        return beir.ndcg_at_k(docs, rec["qrels"], 10)
    if pool.corpus.startswith("locomo"):
        return len(set(ranked[:10]) & set(rec["rel"])) / rec["evidence"]
    return float(bool(ranked) and ranked[0] == rec["answer"])


def halves(pools: Sequence[Pool]) -> dict[str, set[str]]:
    """The tuning and held-out keys of a corpus (seed SEED): queries, or LoCoMo's conversations."""
    keys = sorted({p.key for p in pools})
    random.Random(SEED).shuffle(keys)
    return {"tune": set(keys[: len(keys) // 2]), "hold": set(keys[len(keys) // 2 :])}


def score(rule: Rule, corpora: dict[str, list[Pool]]) -> dict[str, dict[str, float]]:
    """corpus → {tune, hold, all} mean quality of ``rule``."""
    result = {}
    for corpus, pools in corpora.items():
        values = {p.key + "#" + str(i): quality(p, rule(p, DEPTH[corpus])) for i, p in enumerate(pools)}
        split = halves(pools)
        result[corpus] = {
            part: float(np.mean([v for name, v in values.items() if name.split("#")[0] in keys]))
            for part, keys in split.items()
        } | {"all": float(np.mean(list(values.values())))}
    return result


def check_reproduction(corpora: dict[str, list[Pool]]) -> None:
    """The rule search used when a dump was made, re-fused from it, must return what search returned;
    the product's own pool replayed through its own ``fuse.rank`` must return it exactly."""
    for corpus, pools in corpora.items():
        real = np.mean([quality(p, p.real) for p in pools])
        dumped = [p for p in pools if "product" in p.record]
        if dumped:
            differ = [p.key for p in dumped if replayed(p.record["product"], len(p.real)) != p.real]
            print(f"{corpus}: fuse.rank replaying search's own pool: differing {len(differ)}/{len(dumped)}")
        for name, rule in (("RRF (before #31)", Rrf()), ("z-scores (shipped)", Shipped())):
            differ = [p.key for p in pools if rule(p, len(p.real)) != p.real]
            mine = np.mean([quality(p, rule(p, DEPTH[corpus])) for p in pools])
            differing = f"differing {len(differ)}/{len(pools)}"
            print(f"{corpus}: search {real:.4f}; {name} re-fused {mine:.4f}, {differing}")


# --- score-aware variants ------------------------------------------------------------------------


def vector_scores(pool: Pool, tau: float | None = None) -> np.ndarray:
    """Each memory's cosine: its best window's, or a soft max over its windows (temperature ``tau``:
    log of the mean of exp(tau · cosine), over tau)."""
    if tau is None:
        return pool.cos
    key = (id(pool), tau)
    if key not in _SOFT:
        _SOFT[key] = _soft_max(pool, tau)
    return _SOFT[key]


_SOFT: dict[tuple[int, float], np.ndarray] = {}


def _soft_max(pool: Pool, tau: float) -> np.ndarray:
    soft = [np.log(np.mean(np.exp(tau * (w - w.max())))) / tau + w.max() for w in pool.windows]
    return np.asarray(soft, dtype=float)


def _standardise(x: np.ndarray, values: np.ndarray, how: str) -> np.ndarray:
    """z-scores: over the pool (z), over the matches only with the others at the lowest match's
    (zm), or with the spread at least a share of the largest value (zf<share>)."""
    if how == "zm":
        matched = values[values > 0]
        if not matched.size:
            return np.zeros(len(x))
        z = (x - matched.mean()) / (matched.std() or 1.0)
        return np.where(x > 0, z, z[x > 0].min())
    spread = values.std()
    if how.startswith("zf"):
        spread = max(spread, float(how[2:]) * values.max())
    return (x - values.mean()) / (spread or 1.0)


def normalise(x: np.ndarray, inside: np.ndarray, how: str) -> np.ndarray:
    """``x`` scaled over the pool: min-max, max (0 stays 0), z-score, or rank (1 best … 0 worst)."""
    if not inside.any():
        return x
    values = x[inside]
    if how == "rank":
        places = np.empty(len(x))
        places[np.argsort(-x, kind="stable")] = np.arange(len(x))
        return 1 - places / max(len(values), 1)
    if how.startswith("z"):
        return _standardise(x, values, how)
    low = 0.0 if how == "max" else values.min()
    return (x - low) / ((values.max() - low) or 1.0)


@dataclass(frozen=True)
class Convex:
    """alpha · norm(cosine) + (1 − alpha) · norm(BM25) over the pool; BM25 0 where gated out."""

    alpha: float
    how: str = "minmax"  # the cosine's normalisation
    khow: str | None = None  # BM25's (default: the cosine's)
    gate: float = 0.2
    depth: float = 1.0
    tau: float | None = None
    ksat: float | None = None  # BM25 calibrated as b / (b + ksat · the pool's max) before normalising

    def __call__(self, pool: Pool, n: int) -> list[int]:
        """The ``n`` best memories of the pool by the combined score (phrase matches first)."""
        cut = lanes(pool, self.depth, self.gate)
        inside = cut.inside
        cos = vector_scores(pool, self.tau)
        if pool.blind:
            cos = np.where(pool.script, cos, cos[inside].min() if inside.any() else 0.0)
        bm25 = np.where(cut.matched, np.nan_to_num(pool.bm25), 0.0)
        if self.ksat is not None and bm25.size and bm25.max() > 0:
            bm25 = bm25 / (bm25 + self.ksat * bm25.max())
        fused = self.alpha * normalise(cos, inside, self.how)
        fused += (1 - self.alpha) * normalise(bm25, inside, self.khow or self.how)
        return ranked_ids(pool, inside, fused + np.where(pool.phrase, 1e3, 0.0), n)


@dataclass(frozen=True)
class Shipped:
    """``fuse.fused`` since issue #31: alpha · z(cosine) + (1 − alpha) · z(BM25 · min(1, share /
    full)) over the pool, the cosines' spread at least ``cosine_floor`` × (1 − their mean), BM25's at least
    ``keyword_floor`` × the query's whole IDF weight (Lucene's, of the terms' holders in memories'
    own text, as the coverage weighs terms); then each turn of a conversation lifted by its session
    mates (``sessions.lifts``, ``session_weight`` × the mean of its best ``session_mates``), and the
    turns of the speakers the query names by ``speaker_weight`` (``speakers.lifts``)."""

    alpha: float = 0.5
    full: float = 0.2
    keyword_floor: float = 0.08
    cosine_floor: float = 0.06
    session_weight: float | None = None  # ``sessions``' lift (default: the shipped constants)
    session_mates: int | None = None
    speaker_weight: float | None = None  # ``speakers``' lift (default: the shipped constant)

    def __call__(self, pool: Pool, n: int) -> list[int]:
        """The ``n`` best memories of the pool by the fused score (phrase matches first)."""
        cut = lanes(pool, 1.0, 0.0)
        inside = cut.inside
        if not inside.any():
            return []
        cos = pool.cos
        if pool.blind:
            read = inside & pool.script
            cos = np.where(pool.script, cos, cos[read].min() if read.any() else 0.0)
        evidence = np.where(cut.matched, np.nan_to_num(pool.bm25), 0.0) * np.minimum(
            1.0, pool.share / self.full
        )
        weight = pool.record.get("weight")
        if weight is None:  # a dump without it: from FTS5's IDF (exact without contexts or common terms)
            weight = float(np.log1p(np.exp(np.asarray(pool.record.get("idf") or [0.0]))).sum())
        fused = self.alpha * _floored_z(cos, inside, self.cosine_floor * (1 - float(cos[inside].mean())))
        fused += (1 - self.alpha) * _floored_z(evidence, inside, self.keyword_floor * weight)
        fused += self.session_lift(pool, inside, fused)
        fused += self.speaker_lift(pool, inside)
        return ranked_ids(pool, inside, fused + np.where(pool.phrase, 1e3, 0.0), n)

    def speaker_lift(self, pool: Pool, inside: np.ndarray) -> np.ndarray:
        """What the turns of the speakers the query names add (``speakers.lifts``, as ``fuse``
        adds it; the dump's cosines are already those of the query without them)."""
        from remem.core.search import speakers

        lift = np.zeros(len(pool.ids))
        names = pool.record.get("speakers") or []
        place, times = pooled_turns(pool, inside)
        weight = speakers.SPEAKER_WEIGHT if self.speaker_weight is None else self.speaker_weight
        for mid in speakers.lifts(times, names) if len(times) > 1 else {}:
            lift[place[mid]] = weight
        return lift

    def session_lift(self, pool: Pool, inside: np.ndarray, fused: np.ndarray) -> np.ndarray:
        """What each pooled memory's session mates add (``sessions.lifts``, as ``fuse`` calls it)."""
        from remem.core.search import sessions

        lift = np.zeros(len(pool.ids))
        place, times = pooled_turns(pool, inside)
        if len(times) < 2:
            return lift
        weight = sessions.SESSION_WEIGHT if self.session_weight is None else self.session_weight
        mates = sessions.SESSION_MATES if self.session_mates is None else self.session_mates
        scores = {mid: float(fused[i]) for mid, i in place.items()}
        for mid, value in sessions.lifts(scores, times, weight, mates).items():
            lift[place[mid]] = value
        return lift


def pooled_turns(pool: Pool, inside: np.ndarray) -> tuple[dict[int, int], dict[int, Any]]:
    """The pool's members (id → place in the pool) and those of them in a conversation (id →
    ``TurnTime``, as ``Backend.turn_times`` gave them to search)."""
    from remem.backends.base import TurnTime

    place = {int(mid): i for i, mid in enumerate(pool.ids) if inside[i]}
    turns = pool.record.get("turns") or {}
    return place, {int(mid): TurnTime(*turn) for mid, turn in turns.items() if int(mid) in place}


def _floored_z(x: np.ndarray, inside: np.ndarray, floor: float) -> np.ndarray:
    """(x − mean) / max(std, floor) over the pool's members; a spread of 0 counts as 1."""
    values = x[inside]
    return (x - values.mean()) / (max(float(values.std()), floor) or 1.0)


@dataclass(frozen=True)
class Rrf:
    """RRF with constant ``k``, vector weight ``wv``, coverage ``gate``, pool ``depth`` × hybrid's,
    and the vector lane ranked by soft-max windows (``tau``) if given."""

    k: float = 10
    gate: float = 0.2
    depth: float = 1.0
    wv: float = 1.0
    tau: float | None = None

    def __call__(self, pool: Pool, n: int) -> list[int]:
        """The ``n`` best memories by RRF."""
        if self.tau is None:
            return rrf(pool, n, self.k, self.gate, self.depth, self.wv)
        soft = vector_scores(pool, self.tau)
        vrank = np.argsort(np.argsort(-soft, kind="stable"), kind="stable") + 1.0  # soft-max rank
        return rrf(
            _with(pool, cos=soft, vrank=_keep_depth(pool, vrank)), n, self.k, self.gate, self.depth, self.wv
        )


def _keep_depth(pool: Pool, vrank: np.ndarray) -> np.ndarray:
    """Ranks by the new score, among the memories the vector lane's deep top holds."""
    return _rerank(pool.vrank > 0, -vrank)


def _rerank(kept: np.ndarray, score: np.ndarray) -> np.ndarray:
    """1-based ranks by ``score`` (descending) among ``kept``; 0 elsewhere."""
    ranks = np.zeros(len(score))
    ranks[kept] = np.argsort(np.argsort(-score[kept], kind="stable"), kind="stable") + 1
    return ranks


def bm25_scores(pool: Pool, k1: float, b: float) -> np.ndarray:
    """FTS5's BM25 of the pool's memories with other ``k1`` and ``b`` (NaN where no term matches)."""
    from remem.backends.analyzer import CONTEXT_WEIGHT

    rec = pool.record
    if not rec.get("tf"):
        return pool.bm25
    tf = np.asarray(rec["tf"], dtype=float).reshape(len(pool.ids), -1, 2)
    freq = tf[:, :, 0] + CONTEXT_WEIGHT * tf[:, :, 1]
    norm = k1 * (1 - b + b * np.asarray(rec["size"], dtype=float) / rec["mean"])
    total = (np.asarray(rec["idf"]) * freq * (k1 + 1) / (freq + norm[:, None])).sum(axis=1)
    return np.where(np.isnan(pool.bm25), np.nan, total)


def with_bm25(pool: Pool, k1: float, b: float) -> Pool:
    """The pool with BM25 of other ``k1``, ``b``: scores, and keyword ranks among the deep top."""
    key = (id(pool), k1, b)
    if key not in _BM25:
        scores = bm25_scores(pool, k1, b)
        _BM25[key] = _with(pool, bm25=scores, krank=_rerank(pool.krank > 0, np.nan_to_num(scores, nan=-1e9)))
    return _BM25[key]


_BM25: dict[tuple[int, float, float], Pool] = {}


@dataclass(frozen=True)
class Bm25Params:
    """Another rule with the keyword lane's BM25 at other ``k1`` and ``b``."""

    rule: Rule
    k1: float = 1.2
    b: float = 0.75

    def __call__(self, pool: Pool, n: int) -> list[int]:
        """The inner rule's ranking of the re-scored pool."""
        return self.rule(with_bm25(pool, self.k1, self.b), n)


def _with(pool: Pool, **changes: Any) -> Pool:
    from dataclasses import replace

    return replace(pool, **changes)


# --- the table -----------------------------------------------------------------------------------

CORPORA = ("scifact", "locomo", "memory")
#: Reported beside the three, never tuned on: the CJK set (hit@1) with the bundled model and e5.
SIDE = ("cjk", "cjk-e5", "scifact-e5", "locomo-e5", "memory-e5")


def grid() -> dict[str, Rule]:
    """Every variant tried, by name."""
    rules: dict[str, Rule] = {}
    for k in (5, 10, 20, 30):
        for gate in (0.0, 0.1, 0.2, 0.3):
            for wv in (0.8, 1.0, 1.25):
                rules[f"rrf k={k} gate={gate} wv={wv}"] = Rrf(k, gate, wv=wv)
    for depth in (0.5, 2.0):
        rules[f"rrf depth×{depth}"] = Rrf(depth=depth)
    for tau in (5.0, 10.0, 20.0, 50.0):
        rules[f"rrf soft-window tau={tau}"] = Rrf(tau=tau)
    for how, khow in (("minmax", None), ("z", None), ("rank", None), ("minmax", "max"), ("z", "max")):
        for alpha in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
            for gate in (0.0, 0.2):
                rules[f"convex {how}/{khow or how} a={alpha} gate={gate}"] = Convex(alpha, how, khow, gate)
    return rules | lane_grid()


def lane_grid() -> dict[str, Rule]:
    """The keyword lane's BM25 parameters, soft windows and calibrated BM25 under RRF and convex z."""
    rules: dict[str, Rule] = {}
    for k1 in (0.9, 1.2, 1.6, 2.0):
        for b in (0.4, 0.6, 0.75, 0.9):
            rules[f"rrf bm25 k1={k1} b={b}"] = Bm25Params(Rrf(), k1, b)
            rules[f"convex z a=0.5 bm25 k1={k1} b={b}"] = Bm25Params(Convex(0.5, "z"), k1, b)
    for alpha in (0.4, 0.5, 0.6):
        for tau in (10.0, 20.0, 50.0):
            rules[f"convex z a={alpha} soft-window tau={tau}"] = Convex(alpha, "z", tau=tau)
        for ksat in (0.1, 0.3, 1.0):
            rules[f"convex z a={alpha} bm25-sat {ksat}"] = Convex(alpha, "z", ksat=ksat)
    return rules


def featured() -> dict[str, Rule]:
    """The rows of the report: the best of each direction, chosen on the tuning halves."""
    z = Convex(0.5, "z", gate=0.0)
    return {
        "shipped: z, coverage 0.2, floors 0.08 / 0.06, session lift 0.4 × 2 mates": Shipped(),
        "shipped, no session lift (before)": Shipped(session_weight=0.0),
        **{f"shipped, session lift {w}": Shipped(session_weight=w) for w in (0.2, 0.3, 0.5)},
        **{f"shipped, session lift 0.4, {m} mate(s)": Shipped(session_mates=m) for m in (1, 3)},
        "shipped, vector weight 0.45": Shipped(alpha=0.45),
        "shipped, vector weight 0.55": Shipped(alpha=0.55),
        "shipped, BM25 floor 0.06": Shipped(keyword_floor=0.06),
        "shipped, BM25 floor 0.1": Shipped(keyword_floor=0.1),
        "shipped, no BM25 floor": Shipped(keyword_floor=0.0),
        "shipped, no cosine floor": Shipped(cosine_floor=0.0),
        "shipped, cosine floor 0.08": Shipped(cosine_floor=0.08),
        "shipped, every match whole (no coverage)": Shipped(full=1e-12),
        "shipped, coverage 0.3": Shipped(full=0.3),
        "shipped, coverage 0.1": Shipped(full=0.1),
        "convex z a=0.5 gate=0 bm25 zm": Convex(0.5, "z", khow="zm", gate=0.0),
        "convex z a=0.6 gate=0 bm25 zm": Convex(0.6, "z", khow="zm", gate=0.0),
        "convex z a=0.4 gate=0 bm25 zm": Convex(0.4, "z", khow="zm", gate=0.0),
        "convex z a=0.5 gate=0 bm25 zf0.25": Convex(0.5, "z", khow="zf0.25", gate=0.0),
        "convex z a=0.5 gate=0 bm25 zf0.4": Convex(0.5, "z", khow="zf0.4", gate=0.0),
        "convex z a=0.5 gate=0.1": Convex(0.5, "z", gate=0.1),
        "convex z a=0.5 gate=0.05": Convex(0.5, "z", gate=0.05),
        "rrf k=10 gate=0 (no coverage gate)": Rrf(gate=0.0),
        "rrf k=5 gate=0.2": Rrf(5),
        "rrf bm25 k1=0.9 b=0.4": Bm25Params(Rrf(), 0.9, 0.4),
        "rrf soft-window tau=50": Rrf(tau=50.0),
        "rrf depth×2": Rrf(depth=2.0),
        "convex minmax a=0.6 gate=0": Convex(0.6, "minmax", gate=0.0),
        "convex rank a=0.5 gate=0": Convex(0.5, "rank", gate=0.0),
        "convex z a=0.5 gate=0.2": Convex(0.5, "z"),
        "convex z a=0.5 gate=0": z,
        "convex z a=0.55 gate=0": Convex(0.55, "z", gate=0.0),
        "convex z a=0.5 gate=0 soft-window tau=20": Convex(0.5, "z", gate=0.0, tau=20.0),
        "convex z a=0.5 gate=0 depth×2": Convex(0.5, "z", gate=0.0, depth=2.0),
        "convex z a=0.5 gate=0 bm25-sat 0.3": Convex(0.5, "z", gate=0.0, ksat=0.3),
        "convex z a=0.5 gate=0 bm25 k1=0.9 b=0.4": Bm25Params(z, 0.9, 0.4),
        "convex z a=0.55 gate=0 bm25 k1=0.9 b=0.4": Bm25Params(Convex(0.55, "z", gate=0.0), 0.9, 0.4),
        "convex z a=0.55 gate=0.1 bm25 k1=0.9 b=0.4": Bm25Params(Convex(0.55, "z", gate=0.1), 0.9, 0.4),
    }


def gain(result: dict[str, dict[str, float]], base: dict[str, dict[str, float]], part: str) -> float:
    """The smaller relative gain over RRF's on SciFact's and LoCoMo's ``part``; -1 if the memory
    set's ``part`` loses (its tuning half is at 1.0 with RRF: it can only constrain)."""
    if "memory" in result and result["memory"][part] < base["memory"][part]:
        return -1.0
    present = [c for c in ("scifact", "locomo") if c in result]
    return min((result[c][part] / base[c][part] - 1 for c in present), default=0.0)


def row(name: str, result: dict[str, dict[str, float]]) -> str:
    """One table row: tune / hold / all for each corpus, all for each side corpus dumped."""
    cells = [
        " / ".join(f"{result[c][p]:.4f}" for p in ("tune", "hold", "all")) if c in result else "—"
        for c in CORPORA
    ]
    cells += [f"{result[c]['all']:.4f}" for c in SIDE if c in result]
    return f"| {name} | " + " | ".join(cells) + " |"


def evaluate_all(lab: Path, rules: dict[str, Rule], top: int = 25) -> None:
    """Check the reproduction, score the variants, print RRF's row and the best by tuning halves."""
    corpora = {c: load_pools(lab, c) for c in CORPORA + SIDE if (lab / f"{c}.json").exists()}
    check_reproduction(corpora)
    for corpus, pools in corpora.items():
        ms = np.mean([p.record.get("ms", 0) for p in pools])
        print(f"{corpus}: hybrid_rank {ms:.1f} ms/query (the dump's search, on a loaded machine)")
    base = score(Rrf(), corpora)
    results = {name: score(rule, corpora) for name, rule in rules.items()}
    (lab / "results.json").write_text(json.dumps({"rrf": base} | results))
    side = [c for c in SIDE if c in corpora]
    print(
        "\n| variant | SciFact nDCG@10 tune / hold / all | LoCoMo R@10 | memory hit@1 |"
        + " |".join(side)
        + " |"
    )
    print("|---|---|---|---|" + "---|" * len(side))
    print(row("before #31: RRF k=10 gate=0.2", base))
    ranked = sorted(results.items(), key=lambda item: -gain(item[1], base, "tune"))
    for name, result in ranked[:top]:
        print(row(name, result))


def main() -> None:
    """dump or eval (see the module docstring)."""
    parser = _harness.parser(__doc__)
    parser.add_argument("action", nargs="?", choices=["dump", "eval"])
    parser.add_argument("--corpus", choices=CORPORA + SIDE)
    parser.add_argument("--models-dir", type=Path, help="where multilingual-e5-small is (cjk-e5)")
    parser.add_argument("--data", type=Path)
    parser.add_argument("--lab", type=Path, default=LAB)
    parser.add_argument("--grid", action="store_true", help="every variant (≈5 min), not the report's rows")
    args = parser.parse_args()
    print(_harness.machine())
    if args.quick:
        with tempfile.TemporaryDirectory(prefix="remem-fusionlab-") as lab:
            dump("memory", None, Path(lab))
            evaluate_all(Path(lab), featured())
        return
    if args.action is None:
        parser.error("dump or eval (or --quick)")
    if args.action == "dump":
        if not args.corpus:
            parser.error("dump needs --corpus")
        dump(args.corpus, args.data, args.lab, args.models_dir)
    else:
        evaluate_all(args.lab, grid() | featured() if args.grid else featured())


if __name__ == "__main__":
    main()
