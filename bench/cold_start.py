"""Cold wall time of remem commands: each run is a fresh process, as a shell user meets it.

    python bench/cold_start.py [--memories 1000] [--runs 5]

Builds a store of N memory-sized texts with the real bundled model (through the public API,
``remem.open`` and ``Memories.add_many``, the code path of `remem add --lines`), then times
`remem --help`, `list`, `export` and `search` in fresh processes. The baseline measured in the same
run is a bare `python -c pass` interpreter start; the table shows medians and each command's ratio to
it. Page caches are dropped before each run when the machine allows it (root on bare Linux);
otherwise "cold" means a new process with a warm disk cache.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUBJECTS = [
    "the pricing page",
    "the login flow",
    "Postgres",
    "the staging cluster",
    "our CI",
    "the mobile app",
    "the billing service",
    "the search index",
    "the onboarding email",
    "the API gateway",
]
ACTIONS = [
    "moved to",
    "was rewritten in",
    "now depends on",
    "is owned by",
    "was rolled back because of",
    "needs a review of",
    "got faster after",
    "was blocked by",
    "will be replaced by",
    "started using",
]
OBJECTS = [
    "a card grid",
    "short-lived JWTs",
    "version 16",
    "eu-west-1",
    "cached wheels",
    "Kotlin",
    "the new pricing tiers",
    "HNSW graphs",
    "a weekly digest",
    "rate limits",
    "the March release",
    "Alice's team",
    "an outage on Tuesday",
    "feature flags",
    "the security audit",
]


def memory_texts(count: int, seed: int = 0) -> list[str]:
    """Distinct, memory-shaped sentences (10-30 tokens), deterministic for a seed."""
    rng = random.Random(seed)
    texts: list[str] = []
    while len(texts) < count:
        text = f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(ACTIONS)} {rng.choice(OBJECTS)}"
        texts.append(f"{text} (note {len(texts)}: decided in meeting {rng.randint(1, 500)}).")
    return texts


def build_store(directory: Path, count: int) -> None:
    """Fill a new store with ``count`` memories embedded by the bundled model (files verified)."""
    import remem
    from remem.embedders.registry import BUNDLED_MODEL

    embedder = remem.model_catalog().load(BUNDLED_MODEL.name, verify=True)
    with remem.open(directory, embedder=embedder) as memories:
        memories.add_many(remem.NewMemory(text=text, user="bench") for text in memory_texts(count))


def remem_command() -> str:
    """The ``remem`` executable: on PATH, else beside this Python (a venv run without activating it)."""
    found = shutil.which("remem") or shutil.which("remem", path=str(Path(sys.executable).parent))
    return found or sys.exit("remem is not installed in this environment")


def drop_caches() -> bool:
    """Ask the kernel to drop the page cache; False when not allowed here."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


def time_command(argv: list[str], env: dict[str, str], runs: int, cold: bool) -> list[float]:
    """Wall seconds of ``runs`` fresh processes running ``argv`` (output discarded)."""
    times = []
    for _ in range(runs):
        if cold:
            drop_caches()
        start = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    """Build the store, time the commands, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    remem = remem_command()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        started = time.perf_counter()
        build_store(store, args.memories)
        print(f"built a {args.memories}-memory store in {time.perf_counter() - started:.1f} s")
        env = {**os.environ, "REMEM_HOME": str(store)}
        cold = drop_caches()
        print(f"page cache dropped before each run: {'yes' if cold else 'no (not permitted here)'}")
        commands = {
            "python -c pass (baseline)": [sys.executable, "-c", "pass"],
            "remem --help": [remem, "--help"],
            "remem list": [remem, "list"],
            "remem export": [remem, "export"],
            "remem search": [remem, "search", "how did we lay out the checkout screen?"],
        }
        results = {name: time_command(argv, env, args.runs, cold) for name, argv in commands.items()}
    baseline = statistics.median(results["python -c pass (baseline)"])
    print(f"\n| command ({args.runs} fresh processes) | median s | min s | max s | × baseline |")
    print("|---|---:|---:|---:|---:|")
    for name, times in results.items():
        median = statistics.median(times)
        print(f"| {name} | {median:.3f} | {min(times):.3f} | {max(times):.3f} | {median / baseline:.1f} |")


if __name__ == "__main__":
    main()
