"""Measure the activation ranges of the bundled model's int8 variant, for ``embedders/activations.py``.

    python bench/calibrate.py [--scifact ../shared/bench/scifact] [--locomo ../shared/bench/locomo]

Builds the variant (``optimize.build_int8_variant``), runs it one text at a time on 300
memory-sized notes, 300 LoCoMo turns and 50 SciFact documents (first window), records the lowest
and highest value of every quantised activation for each text, and prints the ranges to paste into
``KNOWN_RANGES``: the 1st percentile of the lows and the 99th of the highs (a rare text's extreme
is clipped rather than coarsening every text's steps). Then it checks them on other texts of each
kind: the mean and lowest cosine of the calibrated variant's vectors to the original file's, beside
the variant's own (per-run scales). Only the ranges are kept; the texts are not.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from embed import memory_texts, scifact_texts
from remem.embedders.activations import Ranges, calibrate
from remem.embedders.optimize import build_int8_variant
from remem.embedders.registry import bundled_files
from remem.embedders.sessions import load_session

LOW, HIGH = 1, 99


def locomo_turns(directory: Path) -> list[str]:
    """Every turn of every LoCoMo conversation, shuffled with a fixed seed."""
    turns = []
    for path in sorted(directory.glob("*.json")):
        for key, session in json.loads(path.read_text(encoding="utf-8")).items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [turn["text"] for turn in session if isinstance(turn, dict) and turn.get("text")]
    random.Random(0).shuffle(turns)
    return turns


def activations(variant: Path) -> list[str]:
    """The names of the variant's quantised activations (DynamicQuantizeLinear inputs), in order."""
    model = onnx.load(str(variant), load_external_data=False)
    return [node.input[0] for node in model.graph.node if node.op_type == "DynamicQuantizeLinear"]


def _feeds(session: Any, ids: list[int]) -> dict[str, Any]:
    row = np.array([ids], dtype=np.int64)
    feeds = {"input_ids": row, "attention_mask": np.ones_like(row), "token_type_ids": np.zeros_like(row)}
    return {i.name: feeds[i.name] for i in session.get_inputs()}


def measure(variant: Path, names: list[str], token_ids: list[list[int]]) -> Ranges:
    """The ranges of ``names`` over the texts (one run each), as ``KNOWN_RANGES`` holds them."""
    import onnxruntime as ort

    model = onnx.load(str(variant))
    for name in names:
        model.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    lows: dict[str, list[float]] = {name: [] for name in names}
    highs: dict[str, list[float]] = {name: [] for name in names}
    for ids in token_ids:
        for name, values in zip(names, session.run(names, _feeds(session, ids)), strict=True):
            lows[name].append(float(values.min()))
            highs[name].append(float(values.max()))
    return tuple(
        (
            name,
            round(float(np.percentile(lows[name], LOW)), 4),
            round(float(np.percentile(highs[name], HIGH)), 4),
        )
        for name in names
    )


def agreement(reference: Path, candidate: Path, token_ids: list[list[int]]) -> tuple[float, float]:
    """Mean and lowest cosine between two files' mean-pooled unit vectors, one text per run."""
    cosines = []
    sessions = [load_session(str(path), 1) for path in (reference, candidate)]
    for ids in token_ids:
        row = np.array([ids], dtype=np.int64)
        vectors = []
        for session in sessions:
            feeds = {
                "input_ids": row,
                "attention_mask": np.ones_like(row),
                "token_type_ids": np.zeros_like(row),
            }
            hidden = session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()})[0][0]
            vector = hidden.mean(axis=0)
            vectors.append(vector / np.linalg.norm(vector))
        cosines.append(float(vectors[0] @ vectors[1]))
    return float(np.mean(cosines)), float(np.min(cosines))


def main() -> None:
    """Measure, print the ranges, check them on held-out texts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scifact", type=Path, default=Path("../shared/bench/scifact"))
    parser.add_argument("--locomo", type=Path, default=Path("../shared/bench/locomo"))
    args = parser.parse_args()
    from tokenizers import Tokenizer

    files = bundled_files()
    tokenizer = Tokenizer.from_file(str(files.tokenizer))
    tokenizer.no_padding()
    tokenizer.no_truncation()

    def ids(texts: list[str]) -> list[list[int]]:
        return [
            [*e.ids[:255], e.ids[-1]] if len(e.ids) > 256 else e.ids for e in tokenizer.encode_batch(texts)
        ]

    notes = memory_texts(900, lambda texts: [len(i) for i in ids(texts)], seed=7)
    turns, documents = locomo_turns(args.locomo), scifact_texts(args.scifact, 250)
    calibration = ids(notes[:300] + turns[:300] + documents[:50])
    held_out = {
        "memory-sized notes": notes[300:900],
        "LoCoMo turns": turns[300:900],
        "SciFact": documents[50:],
    }
    with tempfile.TemporaryDirectory() as tmp:
        variant, calibrated = Path(tmp) / "variant.onnx", Path(tmp) / "calibrated.onnx"
        identity = build_int8_variant(files.model, variant)
        ranges = measure(variant, activations(variant), calibration)
        onnx.save(calibrate(onnx.load(str(variant)), ranges), str(calibrated))
        print(f"# variant identity {identity}\nKNOWN_RANGES = {{\n    {identity!r}: (")
        for entry in ranges:
            print(f"        {entry!r},")
        print("    ),\n}\n\n| texts | variant: mean / lowest cosine to the original | calibrated |")
        print("|---|---:|---:|")
        for name, texts in held_out.items():
            base = agreement(files.model, variant, ids(texts))
            fixed = agreement(files.model, calibrated, ids(texts))
            print(
                f"| {name} ({len(texts)}) | {base[0]:.4f} / {base[1]:.4f} | {fixed[0]:.4f} / {fixed[1]:.4f} |"
            )


if __name__ == "__main__":
    main()
