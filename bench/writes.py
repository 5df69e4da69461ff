"""What one write costs a local store as it grows: wall time and bytes written by one ``remem add``
(a CLI process) and one warm ``Memories.add``, on stores of ``--sizes`` memories, exact and HNSW
(their vectors mixed from real embeddings of texts like theirs: ``build``);
and search (cold `remem search`, median of 3; warm p50) with ``--lag`` memories added since the
index file was written (by default, with the adds before, the largest lag the store allows before it
rewrites the file, ``sync.bound`` of its kind: 10,000 exact, 2,000 HNSW; a larger one would have the
file rewritten first and measure a fresh one), then on the same store after `remem reindex` (a fresh
file; the reindex's wall time is the checkpoint's cost). Then a server's day on that fresh store:
``--day`` adds in a row through one long-lived (warmed-up) ``Memories``, a vector search after each,
begun far enough behind the checkpoint that the lag passes half its bound mid-day (where such a
process rewrites the checkpoint in a thread of its own, ``sync.bound``): the searches' p50 of each
tenth of the day against the warm p50 of the same store freshly checkpointed after the day (`remem
compact`), and the adds' p50 and slowest.

    python bench/writes.py [--sizes 1000,100000] [--work /tmp/writes] [--adds 5] [--lag N]
                           [--queries 30] [--kinds exact,hnsw] [--day 1000] [--quick]

The baseline in the same run is one add to the smallest store (the goal: an add to a big store
costs about what it costs a small one); the search columns set a lagging checkpoint beside a
fresh one.

Run it once per code version with the same ``--work`` (the stores are built once, with the
bundled model's identity and vectors mixed from real ones, by ``remem import``, and copied
fresh for every measurement), e.g. main's code in a second worktree as the baseline:

    PYTHONPATH=/tmp/before/src python bench/writes.py --label before
    PYTHONPATH=$PWD/src python bench/writes.py --label after

Bytes written are ``write_bytes`` of ``/proc/PID/io`` (what the process caused to be written to
storage), read by the process itself just before it exits (CLI) or around each call (warm).
Each row is printed and appended to ``WORK/writes-results.txt``.
"""

from __future__ import annotations

import base64
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import _harness
import remem
from remem.backends.local.kinds import IndexKind
from remem.backends.local.sync import bound

_CLI = (
    "import atexit, sys\n"
    "from remem.cli import main\n"
    "def report():\n"
    "    line = [x for x in open('/proc/self/io') if x.startswith('write_bytes')][0]\n"
    "    sys.stderr.write('IO ' + line)\n"
    "atexit.register(report)\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def write_bytes() -> int:
    """This process's ``write_bytes`` so far."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("write_bytes"):
            return int(line.split()[1])
    return 0


def remem_cli(*args: str) -> tuple[float, int, str]:
    """Run the CLI in a fresh process: (wall seconds, bytes it wrote, stdout)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _CLI, *args], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"remem {' '.join(args)} failed: {done.stderr[-2000:]}")
    io = [line for line in done.stderr.splitlines() if line.startswith("IO write_bytes")]
    return wall, int(io[-1].split()[-1]), done.stdout


def model_record(work: Path) -> dict[str, object]:
    """The bundled model's identity as an export carries it (one real `remem add`, each run): the
    stores built before in ``work`` are removed when they hold another model file's vectors (a
    remem that ships another file refuses to add to them)."""
    seed = work / "seed-store"
    shutil.rmtree(seed, ignore_errors=True)
    remem_cli("add", "--store", str(seed), "a seed memory about gardening")
    remem_cli("export", "--store", str(seed), "--with-vectors", "-o", str(work / "seed.jsonl"))
    record: dict[str, object] = json.loads((work / "seed.jsonl").read_text().splitlines()[0])["vector"][
        "model"
    ]
    path = work / "model.json"
    if path.exists() and json.loads(path.read_text()) != record:
        for built in work.glob("mixed-*"):
            shutil.rmtree(built)
        (work / "sample.npy").unlink(missing_ok=True)
    path.write_text(json.dumps(record))
    return record


#: Real embeddings of the store's own kind of text that its vectors are mixed from (``build``).
SAMPLE = 2_000


def _text(n: int) -> str:
    return f"memory {n} about topic {n % 997}"


def real_sample(work: Path) -> np.ndarray:
    """``SAMPLE`` unit vectors of texts like the store's, embedded by the bundled model once
    (``WORK/sample.npy``)."""
    path = work / "sample.npy"
    if not path.exists():
        with remem.open(work / "seed-store") as memories:
            windows = memories.embedder().embed_documents([_text(n * 7) for n in range(SAMPLE)]).windows
        np.save(path, np.stack([rows[0] for rows in windows]).astype(np.float32))
    sample: np.ndarray = np.load(path)
    return sample


def build(work: Path, size: int, kind: str) -> Path:
    """``WORK/mixed-SIZE-KIND``, built once: ``size`` memories whose unit vectors mix three real ones
    (``a + b/2 + c/4`` plus noise, as bench/scale.py), so that the text of the queries and of the
    memories added later is near the store's vectors as in a real store. (Random vectors, as before,
    were all far from it: an HNSW walk from a text query then visits 3.5× the vectors it visits in a
    graph that holds a cluster of text, so a checkpoint without the lag's text memories looked
    slower than one with them.)"""
    store = work / f"mixed-{size}-{kind}"
    if (store / "done").exists():
        return store
    exact = work / f"mixed-{size}-exact"
    if kind == "hnsw":
        build(work, size, "exact")
        shutil.rmtree(store, ignore_errors=True)
        copy_store(exact, store)
        (store / "done").unlink()
        remem_cli("reindex", "--store", str(store), "--index", "hnsw")
        (store / "done").touch()
        return store
    model: dict[str, object] = json.loads((work / "model.json").read_text())  # main: model_record
    base = real_sample(work)
    rng = np.random.default_rng(size)
    source = work / f"import-{size}.jsonl"
    with source.open("w") as out:
        for start in range(0, size, 50_000):
            count = min(50_000, size - start)
            pick = rng.integers(0, len(base), size=(count, 3))
            mix = base[pick[:, 0]] + base[pick[:, 1]] / 2 + base[pick[:, 2]] / 4
            mix += rng.normal(0, 0.015, size=mix.shape)
            mix = (mix / np.linalg.norm(mix, axis=1, keepdims=True)).astype(np.float32)
            for i, vector in enumerate(mix, start):
                vec = {
                    "model": model,
                    "windows": 1,
                    "float32_base64": base64.b64encode(vector.tobytes()).decode(),
                }
                out.write(json.dumps({"text": _text(i), "vector": vec}) + "\n")
    shutil.rmtree(store, ignore_errors=True)
    remem_cli("import", "--store", str(store), str(source))
    source.unlink()
    (store / "done").touch()
    return store


def _copy_file(source: str, target: str) -> None:
    """Copy a file into the page cache as remem left it. The index file in big writes, as remem
    saves it: one copied by ``sendfile`` (shutil's way) sits in the page cache in small pieces, and
    mapping it took 2,861 page faults against 599 for a file remem wrote (100k exact, 154 MB; ~10 ms
    more to verify, ~0.1 s at a million), which a lagging copy paid and a freshly rewritten
    checkpoint did not. The rest by shutil, as SQLite writes its pages of 4 KB: in big pieces, each
    page an add wrote dirtied a large piece, all counted in its ``write_bytes`` (9.3 MB against
    0.16 MB for one ``remem add`` at 100k)."""
    if Path(source).name != "vectors.faiss":
        shutil.copy2(source, target)
        return
    with open(source, "rb") as reading, open(target, "wb") as writing:
        while piece := reading.read(16 << 20):
            writing.write(piece)
    shutil.copystat(source, target)


def copy_store(source: Path, target: Path) -> None:
    """Copy a store directory (``_copy_file``)."""
    shutil.copytree(source, target, copy_function=_copy_file)


def fresh_copy(work: Path, store: Path) -> Path:
    """A copy of ``store`` to write to (the built one stays as it was)."""
    copy = work / "scratch"
    shutil.rmtree(copy, ignore_errors=True)
    copy_store(store, copy)
    return copy


def cli_adds(store: Path, adds: int) -> tuple[float, float]:
    """Median wall seconds and MB written of ``adds`` single `remem add` processes."""
    runs = [
        remem_cli("add", "--store", str(store), f"cli memory number {n} about writes") for n in range(adds)
    ]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs) / 1e6


def search_p50(memories: remem.Memories, queries: list[str]) -> float:
    """Warm p50 milliseconds of vector-mode searches."""
    times = []
    for query in queries:
        started = time.perf_counter()
        memories.search(query, k=10, mode="vector")
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def warm_adds(store: Path, adds: int) -> tuple[float, float]:
    """(median ms of a warm ``Memories.add``, median MB it wrote), in a process that searched first."""
    with remem.open(store) as memories:
        memories.warm_up()
        memories.search("warm up", k=10, mode="vector")
        walls, written = [], []
        for n in range(adds):
            before, started = write_bytes(), time.perf_counter()
            memories.add(f"warm memory number {n} about writes")
            walls.append(time.perf_counter() - started)
            written.append(write_bytes() - before)
    return 1000 * statistics.median(walls), statistics.median(written) / 1e6


def warm_search(store: Path, queries: list[str]) -> float:
    """Warm vector-search p50 ms in a new ``remem.open`` (warmed up, five queries untimed)."""
    with remem.open(store) as memories:
        memories.warm_up()
        for query in queries[:5]:
            memories.search(query, k=10, mode="vector")
        return search_p50(memories, queries)


def lag_then_compact(
    store: Path, kind: str, lag: int, queries: list[str]
) -> tuple[float, float, float, float, float]:
    """After ``lag`` more memories (one ``add_many``): cold `remem search` s and warm p50 ms; then
    the same after `remem reindex --index KIND` (a checkpoint written, or nothing to do: its wall s)
    — the fresh baseline. The kind is named: under ``auto`` a reindex of 50,000 or more builds HNSW."""
    with remem.open(store) as writer:
        writer.add_many([f"lagging memory number {n} about topic {n % 31}" for n in range(lag)])
    cold_lag = statistics.median(remem_cli("search", "--store", str(store), q)[0] for q in queries[:3])
    warm_lag = warm_search(store, queries)
    compact = remem_cli("reindex", "--store", str(store), "--index", kind)[0]  # not auto: no switch
    cold_fresh = statistics.median(remem_cli("search", "--store", str(store), q)[0] for q in queries[:3])
    return cold_lag, warm_lag, compact, cold_fresh, warm_search(store, queries)


def server_day(
    store: Path, kind: str, adds: int, queries: list[str]
) -> tuple[float, float, float, float, float]:
    """A server's day (see the module docstring): (the day's search p50 ms, the worst tenth's p50
    ms, the adds' p50 ms, the slowest add's ms, the warm p50 ms of the same store afterwards,
    freshly checkpointed by `remem compact`: the baseline)."""
    behind = max(0, bound(IndexKind(kind)) // 2 - adds // 2)
    with remem.open(store) as memories:
        if behind:
            memories.add_many([f"before the day {n} about topic {n % 31}" for n in range(behind)])
        memories.warm_up()
        for query in queries[:5]:
            memories.search(query, k=10, mode="vector")
        add_ms, search_ms = [], []
        for n in range(adds):
            started = time.perf_counter()
            memories.add(f"server day memory {n} about topic {n % 29}")
            add_ms.append(1000 * (time.perf_counter() - started))
            started = time.perf_counter()
            memories.search(queries[n % len(queries)], k=10, mode="vector")
            search_ms.append(1000 * (time.perf_counter() - started))
    remem_cli("compact", "--store", str(store))
    tenth = max(1, adds // 10)
    tenths = [statistics.median(search_ms[i : i + tenth]) for i in range(0, adds, tenth)]
    fresh = warm_search(store, queries)
    return statistics.median(search_ms), max(tenths), statistics.median(add_ms), max(add_ms), fresh


def main() -> None:
    parser = _harness.parser(__doc__)
    parser.add_argument("--sizes", type=_harness.int_list, default=None, help="[1000,100000]")
    parser.add_argument("--kinds", default="exact,hnsw")
    parser.add_argument("--work", default="/tmp/writes")
    parser.add_argument("--adds", type=int, default=None, help="[5]")
    parser.add_argument("--lag", type=int, default=None, help="[the kind's bound less the adds]")
    parser.add_argument("--queries", type=int, default=None, help="[30]")
    parser.add_argument("--day", type=int, default=None, help="adds in a server's day [1000]")
    parser.add_argument("--label", default="this code")
    args = parser.parse_args()
    sizes = args.sizes or ([1000, 3000] if args.quick else [1000, 100_000])
    adds = args.adds or (2 if args.quick else 5)
    day = args.day or (50 if args.quick else 1_000)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    model_record(work)
    queries = [f"topic {n * 37 % 997} memory" for n in range(args.queries or (5 if args.quick else 30))]
    results = work / "writes-results.txt"
    print(_harness.machine())
    header = (
        "| code | store | cli add s (× smallest) | cli add MB | warm add ms | warm add MB "
        "| cold search s, lag / fresh (lag) | warm search p50 ms, lag / fresh "
        "| reindex s | server day: search p50 ms, all / worst tenth / fresh after (×) "
        "| day: add p50 / max ms |"
    )
    print(header)
    print("|" + "---|" * 11)
    smallest: dict[str, float] = {}  # the baseline: one add to the smallest store, same run
    for size in sizes:
        for kind in args.kinds.split(","):
            built = build(work, size, kind)
            store = fresh_copy(work, built)
            cli_wall, cli_mb = cli_adds(store, adds)
            smallest.setdefault(kind, cli_wall)
            add_ms, add_mb = warm_adds(store, adds)
            lag = args.lag or (200 if args.quick else bound(IndexKind(kind)) - 2 * adds)  # cli and warm adds
            cold_lag, warm_lag, compact, cold_fresh, warm_fresh = lag_then_compact(store, kind, lag, queries)
            day_p50, worst, day_add, slowest, day_fresh = server_day(store, kind, day, queries)
            row = (
                f"| {args.label} | {size:,} {kind} "
                f"| {cli_wall:.3f} ({_harness.times(cli_wall, smallest[kind])}) "
                f"| {cli_mb:.2f} | {add_ms:.1f} | {add_mb:.2f} | {cold_lag:.2f} / {cold_fresh:.2f} ({lag:,}) "
                f"| {warm_lag:.2f} / {warm_fresh:.2f} | {compact:.2f} "
                f"| {day_p50:.2f} / {worst:.2f} / {day_fresh:.2f} ({_harness.times(worst, day_fresh)}) "
                f"| {day_add:.1f} / {slowest:.0f} |"
            )
            print(row, flush=True)
            with results.open("a") as out:
                out.write(row + "\n")


if __name__ == "__main__":
    main()
