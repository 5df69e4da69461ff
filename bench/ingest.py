"""Bulk ingest rate: `remem add --lines` end to end vs embedding alone, on memory-sized lines.

    python bench/ingest.py [--lines 10000] [--runs 3]

Both are measured in the same run on the same texts: (a) the bundled model's `embed_documents` in
this process (the baseline: the work that cannot be avoided) and (b) a fresh `remem add --lines`
process into an empty store (start-up, parsing, deduplication, embedding, one SQLite transaction,
index write). The table shows memories per second and (b)'s share of time spent beyond embedding.
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


def embed_alone(texts: list[str]) -> float:
    """Seconds the bundled model takes to embed ``texts`` (model already loaded), run from the files
    the CLI runs it from (``remem.model_catalog``: its optimised variant when one was made)."""
    import remem
    from remem.embedders.registry import BUNDLED_MODEL

    embedder = remem.model_catalog().load(BUNDLED_MODEL.name, verify=False)
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
        alone, end_to_end = [], []
        for _ in range(args.runs):  # interleaved so that drift hits both
            alone.append(embed_alone(texts))
            end_to_end.append(ingest_end_to_end(remem, lines_file))
    a, b = statistics.median(alone), statistics.median(end_to_end)
    print(f"{args.lines} lines, {tokens:.0f} words on average, median of {args.runs} runs\n")
    print("| what | seconds | memories/s | × embedding alone |")
    print("|---|---:|---:|---:|")
    print(f"| embedding alone (baseline) | {a:.1f} | {args.lines / a:.0f} | 1.00 |")
    print(f"| `remem add --lines` end to end | {b:.1f} | {args.lines / b:.0f} | {b / a:.2f} |")
    print(f"\noverhead beyond embedding: {b - a:.1f} s ({(b - a) / b:.0%} of the end-to-end time)")


if __name__ == "__main__":
    main()
