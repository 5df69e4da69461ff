"""What the Typer patch (``remem.commands.params``) saves at start: commands with and without it.

    python bench/typer_patch.py [--memories 1000] [--runs 20]

Builds a store of N memories (the fake embedder: no command timed here loads a model) and times
fresh processes of `remem --help`, `list`, `list` with options and a keyword `search`, each once
with the patch and once without (``params.install`` replaced by a no-op before ``remem.cli`` is
imported; the same ``python -c`` entry both ways), interleaved round by round, with `python -c
pass` as the floor. Prints the medians of wall time and of CPU time (user + system: steadier than
wall time on a busy machine) and what the patch saves.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cold_start import compile_remem, memory_texts

RUN = "import sys; from remem.cli import main; sys.exit(main(sys.argv[1:]))"
VARIANTS = {
    "with the patch": RUN,
    "without": "import remem.commands.params as p; p.install = lambda: False; " + RUN,
}
COMMANDS = {
    "remem --help": ["--help"],
    "remem list": ["list"],
    "remem list -k 3 -u bench": ["list", "-k", "3", "-u", "bench"],
    "remem search --mode keyword": ["search", "--mode", "keyword", "pricing page"],
}


def build_store(directory: Path, count: int) -> None:
    """A store of ``count`` memory-sized texts, embedded by the fake embedder."""
    import remem
    from remem.testing import FakeEmbedder

    with remem.open(directory, embedder=FakeEmbedder()) as memories:
        memories.add_many(remem.NewMemory(text=text, user="bench") for text in memory_texts(count))


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def time_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one fresh process running ``argv``."""
    start, cpu = time.perf_counter(), _cpu()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - start, _cpu() - cpu
    if done.returncode not in (0, 1):
        sys.exit(f"{argv[3:]} failed: {done.stderr.decode()}")
    return seconds


def time_all(env: dict[str, str], runs: int) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """``runs`` rounds of the floor and every command in every variant, interleaved."""
    times: dict[tuple[str, str], list[tuple[float, float]]] = {("python -c pass", ""): []}
    for _ in range(runs):
        times[("python -c pass", "")].append(time_once([sys.executable, "-c", "pass"], env))
        for command, args in COMMANDS.items():
            for variant, code in VARIANTS.items():
                times.setdefault((command, variant), []).append(
                    time_once([sys.executable, "-c", code, *args], env)
                )
    return times


def main() -> None:
    """Build the store, time the commands, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    compile_remem()
    with tempfile.TemporaryDirectory() as tmp:
        build_store(Path(tmp) / "store", args.memories)
        times = time_all({**os.environ, "REMEM_HOME": str(Path(tmp) / "store")}, args.runs)
    wall = {key: statistics.median(t[0] for t in values) * 1000 for key, values in times.items()}
    cpu = {key: statistics.median(t[1] for t in values) * 1000 for key, values in times.items()}
    floor = ("python -c pass", "")
    print(f"python -c pass: {wall[floor]:.0f} ms wall, {cpu[floor]:.0f} ms CPU (medians of {args.runs})\n")
    print(f"| command ({args.runs} fresh processes each) | with the patch: wall / CPU ms | without "
          "| saved (wall / CPU) |")  # fmt: skip
    print("|---|---:|---:|---:|")
    for command in COMMANDS:
        (pw, pc), (uw, uc) = ((wall[(command, v)], cpu[(command, v)]) for v in VARIANTS)
        print(f"| {command} | {pw:.0f} / {pc:.0f} | {uw:.0f} / {uc:.0f} | {uw - pw:.0f} / {uc - pc:.0f} |")


if __name__ == "__main__":
    main()
