"""Retrieval quality on BEIR SciFact (test split), through remem's real store and search path.

    python bench/beir.py [--data ../shared/bench/scifact] [--model all-minilm-l6-v2]
                         [--mode vector|keyword|hybrid] [--store DIR|URL] [--batch 256] [--truncate]
                         [--save-run FILE] [--quick]

``--model bge-small-en-v1.5`` (after ``remem model pull bge-small-en-v1.5``) reproduces its published
0.7127 nDCG@10; the model is found and verified through the public API, ``remem.model_catalog().load``
(the catalog the CLI uses, with the same defaults).

Everything else goes through the public API too, as a Python user would: ``remem.open(DIR,
embedder=...)`` on a temporary store, or on ``--store DIR`` or ``--store postgresql://…`` (kept; a
store that already holds the corpus is reused without ingesting again). Every corpus document
(``title + " " + text``, as MTEB embeds it) is added with ``Memories.add_many``
(``meta={"beir_id": _id}``), which embeds it with the model's ``embed_documents`` (every window
of a long document, as remem stores it; with ``--truncate`` only its first window, at the model's
whole window, ``max_tokens``: the MTEB protocol behind the published figures). Each test query is answered
by ``Memories.search`` in the chosen mode (top 100, no filters), which embeds it with
``embed_queries`` (the model's query prefix); hits are mapped back to BEIR ids through their meta.
nDCG@10, Recall@10 and Recall@100 of remem's rankings are computed as pytrec_eval computes them for
BEIR (linear gain, log2 discount, ideal from the qrels; recall over the documents judged relevant),
averaged over the test queries, and compared with the published figures in the data's README.

The data is not part of the repository (CC BY-NC 4.0, evaluation only): pass its folder with --data.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import _harness
from _harness import document_text

if TYPE_CHECKING:
    from remem import DocumentEmbeddings, Embedder, Embeddings, Memories, ModelInfo, SearchMode
    from remem.embedders.runner import OnnxEmbedder

DEFAULT_DATA = _harness.SHARED / "scifact"
TOP_K = 100
META_KEY = "beir_id"

#: Published SciFact test figures (nDCG@10, Recall@10, Recall@100) from the data's README.
PUBLISHED: dict[str, tuple[float, float, float]] = {
    "all-minilm-l6-v2": (0.6451, 0.7833, 0.9250),
    "bge-small-en-v1.5": (0.7127, 0.8362, 0.9450),
    "bge-base-en-v1.5": (0.7435, 0.8742, 0.9627),
    "BM25 (bm25s)": (0.6874, 0.8187, 0.9127),
}

Qrels = Mapping[str, Mapping[str, int]]  # query id -> corpus id -> graded relevance
Rankings = Mapping[str, Sequence[str]]  # query id -> corpus ids, best first


# --- metrics: pure functions, the same definitions as pytrec_eval / trec_eval -------------------


def ndcg_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """nDCG@k with gain = relevance grade and discount log2(rank + 1); 0.0 if nothing is relevant."""
    dcg = sum(max(relevance.get(doc, 0), 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted((grade for grade in relevance.values() if grade > 0), reverse=True)[:k]
    idcg = sum(grade / math.log2(i + 2) for i, grade in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents (grade > 0) among the top k; 0.0 if nothing is relevant."""
    relevant = {doc for doc, grade in relevance.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def evaluate(qrels: Qrels, rankings: Rankings) -> dict[str, float]:
    """Mean nDCG@10, Recall@10, Recall@100 over the queries that have both judgements and a ranking.

    That is the set pytrec_eval evaluates (BEIR averages over it).
    """
    queries = sorted(set(qrels) & set(rankings))
    if not queries:
        return {"nDCG@10": 0.0, "Recall@10": 0.0, "Recall@100": 0.0}
    return {
        "nDCG@10": sum(ndcg_at_k(rankings[q], qrels[q], 10) for q in queries) / len(queries),
        "Recall@10": sum(recall_at_k(rankings[q], qrels[q], 10) for q in queries) / len(queries),
        "Recall@100": sum(recall_at_k(rankings[q], qrels[q], 100) for q in queries) / len(queries),
    }


# --- data ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    """A BEIR dataset's test split: documents as embedded text, queries, judgements."""

    docs: dict[str, str]  # corpus id -> title + " " + text
    queries: dict[str, str]  # query id -> text
    qrels: dict[str, dict[str, int]]


def _read_jsonl(path: Path) -> Iterable[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def load_dataset(directory: Path) -> Dataset:
    """Read corpus.jsonl, queries_test.jsonl and qrels/test.tsv from ``directory``."""
    docs = {doc["_id"]: document_text(doc) for doc in _read_jsonl(directory / "corpus.jsonl")}
    queries = {q["_id"]: q["text"] for q in _read_jsonl(directory / "queries_test.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    with (directory / "qrels" / "test.tsv").open(encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t")
        next(rows)  # header: query-id, corpus-id, score
        for qid, doc_id, score in rows:
            qrels.setdefault(qid, {})[doc_id] = int(score)
    return Dataset(docs=docs, queries={q: t for q, t in queries.items() if q in qrels}, qrels=qrels)


# --- model, store, search ------------------------------------------------------------------------


class TimedEmbedder:
    """An ``Embedder`` around the model's: adds the seconds each call takes, and with ``truncate``
    stores each document as its first window only (MTEB embeds a document cut to the model window).

    The first window is the one ``embed_documents`` makes at the model's whole window (``mteb_windows``):
    [CLS], the first ``max_tokens - 2`` tokens, [SEP]: the text cut to the window. ``info`` is the
    model's: the vectors are the model's vectors.
    """

    def __init__(self, inner: Embedder, *, truncate: bool = False) -> None:
        """Wrap ``inner``; documents keep only their first window when ``truncate``."""
        self.inner = inner
        self.truncate = truncate
        self.document_seconds = 0.0
        self.query_seconds = 0.0

    @property
    def info(self) -> ModelInfo:
        """The wrapped model's identity."""
        return self.inner.info

    def embed_documents(self, texts: Sequence[str]) -> DocumentEmbeddings:
        """The model's document vectors (first windows only with ``truncate``), timed."""
        from remem import DocumentEmbeddings

        started = time.perf_counter()
        embedded = self.inner.embed_documents(texts)
        if self.truncate:
            embedded = DocumentEmbeddings(tuple(rows[:1] for rows in embedded.windows))
        self.document_seconds += time.perf_counter() - started
        return embedded

    def embed_queries(self, texts: Sequence[str]) -> Embeddings:
        """The model's query vectors, timed."""
        started = time.perf_counter()
        embedded = self.inner.embed_queries(texts)
        self.query_seconds += time.perf_counter() - started
        return embedded


def mteb_windows(model: OnnxEmbedder) -> OnnxEmbedder:
    """``model`` windowing stored texts at its whole window (``max_tokens``), as MTEB cuts a document,
    not at the length it was trained on (``ModelSpec.document_window``: 128 for the bundled model)."""
    from remem.embedders.runner import OnnxEmbedder

    whole = dataclasses.replace(model.spec, document_tokens=0)
    return OnnxEmbedder.of(whole, model.files, sha256=model.sha256)


@dataclass
class Ingest:
    """What ingesting did: documents embedded and stored now, and the seconds each part took."""

    embedded: int = 0
    embed_seconds: float = 0.0
    store_seconds: float = 0.0

    @property
    def seconds(self) -> float:
        """Wall seconds of embedding plus storing."""
        return self.embed_seconds + self.store_seconds


def memory_to_docs(memories: Memories, docs: Mapping[str, str]) -> dict[int, list[str]]:
    """Memory id -> every corpus id whose text it holds.

    The memory's ``beir_id`` meta names the document that created it; a document whose text was
    already stored (deduplicated by ``add_many``) is attached to that memory by its text. Memories
    that are not corpus documents make the store unusable for the benchmark (they would compete).
    """
    mapping: dict[int, list[str]] = {}
    by_text: dict[str, int] = {}
    for memory in memories.iter():
        doc_id = memory.meta.get(META_KEY)
        if doc_id is None or docs.get(doc_id) != memory.text:
            raise SystemExit(
                f"Error: {memories.location} holds memory {memory.id}, which is not a corpus document"
            )
        mapping[memory.id] = [doc_id]
        by_text[memory.text] = memory.id
    for doc_id, text in docs.items():
        mid = by_text.get(text)
        if mid is not None and doc_id not in mapping[mid]:
            mapping[mid].append(doc_id)
    return mapping


def ingest(memories: Memories, embedder: TimedEmbedder, docs: Mapping[str, str], batch: int) -> Ingest:
    """Add every corpus document the store does not hold yet with ``Memories.add_many``, ``batch``
    documents a call (each call embeds them, in chunks of at most 256, and stores them in one
    transaction). ``embed_seconds`` is the time spent in ``embedder``; ``store_seconds`` the rest."""
    from remem import NewMemory

    covered = {doc for ids in memory_to_docs(memories, docs).values() for doc in ids}
    todo = [doc_id for doc_id in docs if doc_id not in covered]
    done = Ingest(embedded=len(todo))
    for start in range(0, len(todo), batch):
        ids = todo[start : start + batch]
        embedded_before = embedder.document_seconds
        started = time.perf_counter()
        memories.add_many(NewMemory(text=docs[doc_id], meta={META_KEY: doc_id}) for doc_id in ids)
        embed_seconds = embedder.document_seconds - embedded_before
        done.embed_seconds += embed_seconds
        done.store_seconds += time.perf_counter() - started - embed_seconds
        print(f"\r  ingested {start + len(ids)}/{len(todo)}", end="", file=sys.stderr, flush=True)
    if todo:
        print(file=sys.stderr)
    return done


def search(memories: Memories, mode: SearchMode, text: str, k: int) -> list[tuple[int, float]]:
    """The top ``k`` memories for ``text`` in ``mode``, best first: (memory id, the mode's score)."""
    return [(hit.memory.id, hit.score) for hit in memories.search(text, k=k, mode=mode)]


def retrieve(
    memories: Memories,
    embedder: TimedEmbedder,
    dataset: Dataset,
    mode: SearchMode,
    mapping: Mapping[int, Sequence[str]],
) -> tuple[dict[str, list[str]], float, float]:
    """Each query's ranking (corpus ids, best first), seconds spent embedding queries and searching.

    Each query is one ``Memories.search`` call (which embeds it, unless in keyword mode); the
    embedding time is what ``embedder`` spent, the search time the rest. The ranking is remem's
    order. A memory that holds several corpus documents (identical texts) contributes all of them at
    its place, by id descending as trec_eval breaks ties; like BEIR, each query keeps at most
    ``TOP_K`` documents.
    """
    rankings: dict[str, list[str]] = {}
    embedded_before = embedder.query_seconds
    started = time.perf_counter()
    for qid, text in dataset.queries.items():
        hits = search(memories, mode, text, TOP_K)
        ranked = [doc_id for mid, _ in hits for doc_id in sorted(mapping[mid], reverse=True)]
        rankings[qid] = ranked[:TOP_K]
    embed_seconds = embedder.query_seconds - embedded_before
    return rankings, embed_seconds, time.perf_counter() - started - embed_seconds


# --- report --------------------------------------------------------------------------------------


def published_ndcg(model: str, mode: str) -> tuple[str, float] | None:
    """(row name, nDCG@10) of the published figure this run compares with, if there is one."""
    row = {"vector": model, "keyword": "BM25 (bm25s)"}.get(mode)  # no published hybrid figure
    return (row, PUBLISHED[row][0]) if row in PUBLISHED else None


def print_report(model: str, mode: str, metrics: Mapping[str, float]) -> None:
    """The results table, then the published rows for reference."""
    reference = published_ndcg(model, mode)
    published = f"{reference[1]:.4f}" if reference else "—"
    delta = f"{metrics['nDCG@10'] - reference[1]:+.4f}" if reference else "—"
    print("\n| model | mode | nDCG@10 | Recall@10 | Recall@100 | published nDCG@10 | Δ |")
    print("|---|---|---:|---:|---:|---:|---:|")
    print(
        f"| {model} | {mode} | {metrics['nDCG@10']:.4f} | {metrics['Recall@10']:.4f} "
        f"| {metrics['Recall@100']:.4f} | {published} | {delta} |"
    )
    print("\npublished (SciFact test, MTEB results; nDCG@10 / Recall@10 / Recall@100):")
    for name, (ndcg, r10, r100) in PUBLISHED.items():
        print(f"  {name:<18} {ndcg:.4f} / {r10:.4f} / {r100:.4f}")


def quick_subset(dataset: Dataset, queries: int = 15, others: int = 100) -> Dataset:
    """``--quick``: the first ``queries`` test queries, the documents they judge and ``others`` more."""
    kept = dict(list(dataset.qrels.items())[:queries])
    judged = {doc for relevant in kept.values() for doc in relevant}
    wanted = judged | set(list(dataset.docs)[:others])
    return Dataset(
        docs={doc: text for doc, text in dataset.docs.items() if doc in wanted},
        queries={q: text for q, text in dataset.queries.items() if q in kept},
        qrels=kept,
    )


def save_run(path: Path, rankings: Rankings, tag: str) -> None:
    """Write the rankings in TREC run format (qid Q0 docid rank score tag), e.g. for trec_eval.

    The score column is derived from the rank (N for the first of N, down to 1) so that trec_eval,
    which re-sorts by score and breaks ties by document id, keeps remem's order even where remem's
    own scores tie (RRF scores in hybrid mode often do).
    """
    with path.open("w", encoding="utf-8") as handle:
        for qid, ranked in rankings.items():
            for position, doc_id in enumerate(ranked, start=1):
                handle.write(f"{qid} Q0 {doc_id} {position} {len(ranked) - position + 1} {tag}\n")


def main() -> None:
    """Parse options, build or reuse the store, run the queries, print timings and the table."""
    import remem
    from remem.embedders.registry import BUNDLED_MODEL
    from remem.errors import RememError

    parser = _harness.parser(__doc__)
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="the SciFact folder (default: %(default)s)"
    )
    parser.add_argument("--model", default=BUNDLED_MODEL.name, help="model name (default: %(default)s)")
    parser.add_argument(
        "--mode",
        choices=[m.value for m in remem.SearchMode],
        default=remem.SearchMode.VECTOR.value,
        help="search mode",
    )
    parser.add_argument(
        "--store",
        help="keep the store here, a directory or a postgresql:// URL (reused if it holds the corpus)",
    )
    parser.add_argument("--batch", type=int, default=256, help="texts per Memories.add_many call")
    parser.add_argument(
        "--truncate", action="store_true", help="store only each document's first window (as MTEB does)"
    )
    parser.add_argument("--save-run", type=Path, metavar="FILE", help="also write the run in TREC format")
    args = parser.parse_args()
    if args.batch < 1:
        parser.error("--batch must be at least 1")
    try:
        dataset = load_dataset(args.data)
    except (OSError, ValueError, KeyError) as exc:
        sys.exit(f"Error: cannot read the BEIR data in {args.data}: {exc}")
    if args.quick:
        dataset = quick_subset(dataset)
    print(_harness.machine())
    try:
        # The model is found and verified through the catalog the CLI uses (same defaults).
        model = remem.model_catalog().load(args.model, verify=True)
        embedder = TimedEmbedder(mteb_windows(model) if args.truncate else model, truncate=args.truncate)
        with tempfile.TemporaryDirectory(prefix="remem-beir-") as tmp:
            directory = args.store or Path(tmp) / "store"
            with remem.open(directory, embedder=embedder) as memories:
                memories.embedder()  # refuses a kept store of another model before anything is done
                done = ingest(memories, embedder, dataset.docs, args.batch)
                mapping = memory_to_docs(memories, dataset.docs)
                rankings, embed_s, search_s = retrieve(
                    memories, embedder, dataset, remem.SearchMode(args.mode), mapping
                )
    except RememError as exc:
        sys.exit(f"Error: {exc}")
    shared = sum(len(ids) - 1 for ids in mapping.values())
    windows = "first window only (--truncate)" if args.truncate else "every window"
    print(f"model: {args.model}; documents stored as {windows}")
    print(f"store: {args.store or 'temporary'}; {len(mapping)} memories for {len(dataset.docs)} documents")
    print(f"documents sharing a memory with an identical-text document: {shared}")
    if done.embedded:
        rate = done.embedded / done.seconds
        print(
            f"ingest: {done.embedded} docs in {done.seconds:.1f} s ({rate:.1f} docs/s; "
            f"embed {done.embed_seconds:.1f} s, add_many {done.store_seconds:.1f} s)"
        )
    else:
        print("ingest: skipped, the store already holds the corpus")
    per_query = (embed_s + search_s) / max(len(rankings), 1) * 1000
    print(
        f"queries: {len(rankings)} in {embed_s + search_s:.2f} s "
        f"(embed {embed_s:.2f} s, search {search_s:.2f} s; {per_query:.1f} ms/query)"
    )
    if args.save_run:
        save_run(args.save_run, rankings, f"remem-{args.model}-{args.mode}")
    print_report(args.model, args.mode, evaluate(dataset.qrels, rankings))


if __name__ == "__main__":
    main()
