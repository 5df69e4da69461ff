"""Measure the activation ranges of the int8 variant, for ``activations.KNOWN_RANGES`` (a build input).

    python tools/modelbuild/calibrate.py [--scifact ../shared/bench/scifact] [--locomo ../shared/bench/locomo]

Makes the int8 variant of the upstream file in memory (``variant.make_int8``, step 1 of the build),
runs it one text at a time on 300 memory-sized notes (``bench/embed.py``'s generator), 300 LoCoMo
turns and 50 SciFact documents (first window), records the lowest and highest value of every
quantised activation for each text, and prints the ranges to paste into ``KNOWN_RANGES``: the 1st
percentile of the lows and the 99th of the highs (a rare text's extreme is clipped rather than
coarsening every text's steps). Then it checks them on other texts of each kind: the mean and
lowest cosine of the calibrated variant's vectors to the upstream file's, beside the variant's own
(per-run scales). Only the ranges are kept; the texts are not.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))  # bench/embed.py's texts
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # modelbuild

from embed import memory_texts, scifact_texts
from modelbuild.activations import Ranges
from modelbuild.build import session, upstream_file
from modelbuild.variant import load_model, make_calibrated, make_int8
from remem.embedders.registry import bundled_tokenizer

LOW, HIGH = 1, 99


def locomo_turns(directory: Path) -> list[str]:
    """Every turn of every LoCoMo conversation, shuffled with a fixed seed."""
    turns = []
    for path in sorted(directory.glob("*.json")):
        for key, conversation in json.loads(path.read_text(encoding="utf-8")).items():
            if key.startswith("session_") and isinstance(conversation, list):
                turns += [t["text"] for t in conversation if isinstance(t, dict) and t.get("text")]
    random.Random(0).shuffle(turns)
    return turns


def activations(variant: onnx.ModelProto) -> list[str]:
    """The names of the variant's quantised activations (DynamicQuantizeLinear inputs), in order."""
    return [node.input[0] for node in variant.graph.node if node.op_type == "DynamicQuantizeLinear"]


def _feeds(model: Any, ids: list[int]) -> dict[str, Any]:
    row = np.array([ids], dtype=np.int64)
    feeds = {"input_ids": row, "attention_mask": np.ones_like(row), "token_type_ids": np.zeros_like(row)}
    return {i.name: feeds[i.name] for i in model.get_inputs()}


def measure(variant: onnx.ModelProto, names: list[str], token_ids: list[list[int]]) -> Ranges:
    """The ranges of ``names`` over the texts (one run each), as ``KNOWN_RANGES`` holds them."""
    probed = copy.deepcopy(variant)
    for name in names:
        probed.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    # onnxruntime's default session, as when KNOWN_RANGES was measured (the ranges are rounded to 4
    # places; another graph optimisation could move a last digit)
    model = ort.InferenceSession(probed.SerializeToString(), providers=["CPUExecutionProvider"])
    lows: dict[str, list[float]] = {name: [] for name in names}
    highs: dict[str, list[float]] = {name: [] for name in names}
    for ids in token_ids:
        for name, values in zip(names, model.run(names, _feeds(model, ids)), strict=True):
            lows[name].append(float(values.min()))
            highs[name].append(float(values.max()))
    low = {name: round(float(np.percentile(lows[name], LOW)), 4) for name in names}
    return tuple((name, low[name], round(float(np.percentile(highs[name], HIGH)), 4)) for name in names)


def agreement(reference: bytes, candidate: bytes, token_ids: list[list[int]]) -> tuple[float, float]:
    """Mean and lowest cosine between two models' mean-pooled unit vectors, one text per run."""
    models = [session(data) for data in (reference, candidate)]
    cosines = []
    for ids in token_ids:
        vectors = []
        for model in models:
            vector = model.run(None, _feeds(model, ids))[0][0].mean(axis=0)
            vectors.append(vector / np.linalg.norm(vector))
        cosines.append(float(vectors[0] @ vectors[1]))
    return float(np.mean(cosines)), float(np.min(cosines))


def main() -> None:
    """Measure, print the ranges, check them on held-out texts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scifact", type=Path, default=Path("../shared/bench/scifact"))
    parser.add_argument("--locomo", type=Path, default=Path("../shared/bench/locomo"))
    args = parser.parse_args()
    tokenizer = Tokenizer.from_file(str(bundled_tokenizer()))
    tokenizer.no_padding()
    tokenizer.no_truncation()

    def ids(texts: list[str]) -> list[list[int]]:
        encoded = tokenizer.encode_batch(texts)
        return [[*e.ids[:255], e.ids[-1]] if len(e.ids) > 256 else e.ids for e in encoded]

    notes = memory_texts(900, lambda texts: [len(i) for i in ids(texts)], seed=7)
    turns, documents = locomo_turns(args.locomo), scifact_texts(args.scifact, 250)
    calibration = ids(notes[:300] + turns[:300] + documents[:50])
    held_out = {
        "memory-sized notes": notes[300:900],
        "LoCoMo turns": turns[300:900],
        "SciFact": documents[50:],
    }
    source = upstream_file()
    variant = load_model(source)
    identity = make_int8(variant)
    ranges = measure(variant, activations(variant), calibration)
    calibrated = copy.deepcopy(variant)
    make_calibrated(calibrated, ranges)
    print(f"# variant identity {identity}\nKNOWN_RANGES = {{\n    {identity!r}: (")
    for entry in ranges:
        print(f"        {entry!r},")
    print("    ),\n}\n\n| texts | variant: mean / lowest cosine to the upstream file | calibrated |")
    print("|---|---:|---:|")
    original, plain, fixed = source.read_bytes(), variant.SerializeToString(), calibrated.SerializeToString()
    for name, texts in held_out.items():
        base, ours = agreement(original, plain, ids(texts)), agreement(original, fixed, ids(texts))
        print(f"| {name} ({len(texts)}) | {base[0]:.4f} / {base[1]:.4f} | {ours[0]:.4f} / {ours[1]:.4f} |")


if __name__ == "__main__":
    main()
