"""Cold wall time of remem commands: each run is a fresh process, as a shell user meets it.

    python bench/cold_start.py [--memories 1000] [--runs 9] [--quick]

Builds a store of N memory-sized texts with the model a new store chooses (through the public API,
``remem.open`` and ``Memories.add_many``, the code path of `remem add --lines`), then times
`remem --help`, `list`, `export` and `search` in fresh processes. Three baselines are measured in the
same run: a bare `python -c pass`, the front-end floor (`python -c "import typer, sqlite3"`: what
`--help` and `list` compare to) and the import floor (`python -c "import numpy, faiss, onnxruntime,
tokenizers, typer"`: what `search` compares to). The table shows medians and each command's ratio to
its floor. Commands and baselines run interleaved (one of each per round). Page caches are dropped
before each run when the machine allows it (root on bare Linux); otherwise "cold" means a new
process with a warm disk cache. Only public API and the CLI are used, so the same file measures an
older checkout (``PYTHONPATH=that/src``).

    python bench/cold_start.py --model multilingual-e5-small [--memories 500] [--runs 9]

also times a cold `remem search` on a store of that model beside one of the bundled model (the
baseline, the same memories, run in turn): wall, CPU (user + system) and peak resident memory of
each fresh process, measured by a small process of its own (a child of this one, which has loaded
both models, would count this one's memory as its own). A model built by `remem model pull` (the
multilingual one, from its package) is built into a temporary models directory first.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _harness
from _harness import build_store, compile_remem, drop_caches, remem_command


def time_once(argv: list[str], env: dict[str, str], cold: bool) -> float:
    """Wall seconds of one fresh process running ``argv`` (output discarded)."""
    if cold:
        drop_caches()
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def time_interleaved(
    commands: dict[str, list[str]], env: dict[str, str], runs: int, cold: bool
) -> dict[str, list[float]]:
    """``runs`` rounds of every command once, so that drift from other load hits all alike."""
    results: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            results[name].append(time_once(argv, env, cold))
    return results


PASS = "python -c pass"
FRONT_FLOOR = "python -c 'import typer, sqlite3' (front-end floor)"
IMPORT_FLOOR = "python -c 'import numpy, faiss, onnxruntime, tokenizers, typer' (import floor)"
#: Which floor each command is compared to (the issue's goals: 1.5× and 1.3×).
FLOORS = {"remem --help": FRONT_FLOOR, "remem list": FRONT_FLOOR, "remem export": FRONT_FLOOR}


#: Runs argv, prints its wall seconds, CPU seconds (user + system) and peak resident MiB.
MEASURE = (
    "import os, subprocess, sys, time; start = time.perf_counter(); child = subprocess.Popen("
    "sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); _, _, use = os.wait4("
    "child.pid, 0); print(time.perf_counter() - start, use.ru_utime + use.ru_stime, use.ru_maxrss / 1024)"
)
BUNDLED = "all-minilm-l6-v2"


def measure_once(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MiB) of one fresh process running ``argv``, measured by a small process."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *argv], env=env, capture_output=True, text=True, check=True
    )
    wall, cpu, peak = (float(part) for part in done.stdout.split())
    return wall, cpu, peak


def compare_models(model: str, memories: int, runs: int) -> None:
    """Cold `remem search` on a store of ``model`` and one of the bundled model, in turn; a table."""
    remem = remem_command()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "REMEM_MODELS": str(Path(tmp) / "models")}
        subprocess.run([remem, "model", "pull", model], env=env, check=True, stdout=subprocess.DEVNULL)
        lines = "\n".join(_harness.memory_texts(memories)) + "\n"
        stores = {name: Path(tmp) / name for name in (BUNDLED, model)}
        for name, store in stores.items():
            subprocess.run(
                [remem, "--model", name, "-q", "add", "--lines", "-", "--store", str(store)],
                input=lines, text=True, env=env, check=True, stdout=subprocess.DEVNULL,
            )  # fmt: skip
        query = ["search", "how did we lay out the checkout screen?"]
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in stores}
        for _ in range(runs):
            for name, store in stores.items():
                results[name].append(measure_once([remem, *query, "--store", str(store)], env))
    medians = {
        name: [statistics.median(row[i] for row in rows) for i in range(3)] for name, rows in results.items()
    }
    print(f"\n| cold `remem search`, {memories} memories ({runs} fresh processes each, in turn) | wall s "
          "| CPU s | peak MB | CPU × bundled | peak × bundled |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    for name, (wall, cpu, peak) in medians.items():
        base = medians[BUNDLED]
        label = f"{name} (baseline)" if name == BUNDLED else name
        print(
            f"| {label} | {wall:.3f} | {cpu:.3f} | {peak:.0f} | {cpu / base[1]:.2f} | {peak / base[2]:.2f} |"
        )


def main() -> None:
    """Build the store, time the commands, print the table."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--memories", type=int, help="memories in the store (default 1000; 100 quick)")
    parser.add_argument("--runs", type=int, help="fresh processes per command (default 9; 2 quick)")
    parser.add_argument("--model", help="a cold search of a store of this model beside the bundled one's")
    args = parser.parse_args()
    args.runs = args.runs or (2 if args.quick else 9)
    print(_harness.machine())
    if args.model:
        compare_models(args.model, args.memories or (100 if args.quick else 500), args.runs)
        return
    args.memories = args.memories or (100 if args.quick else 1000)
    remem = remem_command()
    compile_remem()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        started = time.perf_counter()
        build_store(store, args.memories)
        print(f"built a {args.memories}-memory store in {time.perf_counter() - started:.1f} s")
        env = {**os.environ, "REMEM_HOME": str(store)}
        cold = not args.quick and drop_caches()  # a quick run leaves the page cache alone
        print(f"page cache dropped before each run: {'yes' if cold else 'no (not permitted here)'}")
        commands = {
            PASS: [sys.executable, "-c", "pass"],
            FRONT_FLOOR: [sys.executable, "-c", "import typer, sqlite3"],
            IMPORT_FLOOR: [sys.executable, "-c", "import numpy, faiss, onnxruntime, tokenizers, typer"],
            "remem --help": [remem, "--help"],
            "remem list": [remem, "list"],
            "remem export": [remem, "export"],
            "remem search": [remem, "search", "how did we lay out the checkout screen?"],
        }
        results = time_interleaved(commands, env, args.runs, cold)
    medians = {name: statistics.median(times) for name, times in results.items()}
    print(f"\n| command ({args.runs} fresh processes) | median s | min s | max s | × `python -c pass` "
          "| × its floor |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    for name, times in results.items():
        floor = FLOORS.get(name, IMPORT_FLOOR) if name.startswith("remem") else None
        versus = f"{medians[name] / medians[floor]:.2f}" if floor else ""
        print(
            f"| {name} | {medians[name]:.3f} | {min(times):.3f} | {max(times):.3f} "
            f"| {medians[name] / medians[PASS]:.1f} | {versus} |"
        )


if __name__ == "__main__":
    main()
