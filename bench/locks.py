"""How long writers of one store wait for its lock: ``remem.portable.lock_file`` (filelock's lock of a
descriptor, tried again after a pause that doubles up to 1 ms, up to 50 ms after a second) against
the kernel's blocking ``flock`` (what the store used before it ran on Windows; POSIX only), in the
same run.

``--writers`` processes each take the lock ``--cycles`` times and hold it ``--hold-ms`` (a small
commit), then work ``--between-ms`` without it (embedding the next text), on one lock file, as
concurrent ``remem add`` processes do. The rounds
alternate the two locks; the table gives the median round's wall time, locks per second and the
time a writer waited for the lock (p50, p99).

    python bench/locks.py [--writers 4] [--cycles 200] [--hold-ms 2] [--between-ms 5] [--rounds 3]
                          [--quick]
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import _harness
from remem.portable import lock_file, unlock_file


def _flock(fd: int) -> None:
    import fcntl  # the baseline: POSIX only

    fcntl.flock(fd, fcntl.LOCK_EX)


def _flock_release(fd: int) -> None:
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_UN)


LOCKS: dict[str, tuple[Any, Any]] = {
    "flock, the kernel waits (before)": (_flock, _flock_release),
    "remem.portable.lock_file (filelock)": (lock_file, unlock_file),
}


def _writer(name: str, path: str, cycles: int, pauses: tuple[float, float], start: Any, waits: Any) -> None:
    take, release = LOCKS[name]
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    start.wait()
    mine = []
    for _ in range(cycles):
        began = time.perf_counter()
        take(fd)
        mine.append(time.perf_counter() - began)
        time.sleep(pauses[0])
        release(fd)
        time.sleep(pauses[1])
    os.close(fd)
    waits.put(mine)


def _round(
    name: str, path: Path, writers: int, cycles: int, pauses: tuple[float, float]
) -> tuple[float, list[float]]:
    """(wall seconds, every wait) of one round of ``writers`` processes."""
    context = multiprocessing.get_context("spawn")
    start, waits = context.Event(), context.Queue()
    processes = [
        context.Process(target=_writer, args=(name, str(path), cycles, pauses, start, waits))
        for _ in range(writers)
    ]
    for process in processes:
        process.start()
    time.sleep(0.5)  # every writer started and opened the file
    began = time.perf_counter()
    start.set()
    every = [wait for _ in processes for wait in waits.get(timeout=600)]
    wall = time.perf_counter() - began
    for process in processes:
        process.join(60)
    return wall, every


def main() -> None:
    """Measure both locks in alternating rounds and print the table."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--cycles", type=int, help="default 200; 30 quick")
    parser.add_argument("--hold-ms", type=float, default=2.0)
    parser.add_argument("--between-ms", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, help="default 3; 1 quick")
    args = parser.parse_args()
    cycles = args.cycles or (30 if args.quick else 200)
    rounds = args.rounds or (1 if args.quick else 3)
    print(_harness.machine())
    results: dict[str, list[tuple[float, list[float]]]] = {name: [] for name in LOCKS}
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "write.lock"
        for number in range(rounds):
            for name in LOCKS:
                _harness.note(f"round {number + 1}/{rounds}: {name}")
                pauses = (args.hold_ms / 1000, args.between_ms / 1000)
                results[name].append(_round(name, path, args.writers, cycles, pauses))
    rows, baseline = [], 0.0
    for name, runs in results.items():
        wall, waits = sorted(runs, key=lambda run: run[0])[len(runs) // 2]
        baseline = baseline or wall
        rows.append(
            [
                name,
                f"{wall:.2f}",
                _harness.times(wall, baseline),
                f"{len(waits) / wall:.0f}",
                f"{statistics.median(waits) * 1000:.1f}",
                f"{_harness.percentile(waits, 0.99) * 1000:.1f}",
            ]
        )
    _harness.table(
        ["lock", "wall s", "× before", "locks/s", "wait p50 ms", "wait p99 ms"],
        rows,
        f"{args.writers} writers × {cycles} locks, each held {args.hold_ms:g} ms, {args.between_ms:g} ms "
        f"apart (median of {rounds} rounds)",
    )


if __name__ == "__main__":
    main()
