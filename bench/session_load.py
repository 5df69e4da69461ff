"""How long a session of the cached optimised graph takes to load, before and after it was verified.

    python bench/session_load.py [--runs 15] [--models DIR]

Builds the bundled model's cache (variant, calibrated variant, optimised graph) the way a new store
does, in ``--models`` (default: a temporary directory), then times, interleaved, in this process:
``mapped`` — onnxruntime given the cached graph's path, its weights file mapped into memory (what
remem did before the files were verified; a file cut under a running process then killed it with
SIGBUS); ``verified`` — ``sessions.load_session`` as remem runs it now (both files read, hashed
against their record, given to onnxruntime from memory); ``hash only`` — reading and hashing the two
files; ``optimise`` — a session optimised from the calibrated file (what no cache costs). Medians
and minima in ms.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def build_cache(models: Path) -> Path:
    """The bundled model's directory in ``models``, with its cache built by a new store's first add."""
    import remem
    from remem.embedders.registry import BUNDLED_MODEL

    with tempfile.TemporaryDirectory() as store, remem.open(Path(store) / "s", models_dir=models) as memories:
        memories.add("a first memory builds the model cache")
    return models / BUNDLED_MODEL.name / "bundled"


def main() -> None:
    """Time the four ways of making a session and print a table of medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--models", type=Path, default=None)
    args = parser.parse_args()
    import onnxruntime as ort

    from remem.embedders import sessions
    from remem.embedders.cache import ModelCache
    from remem.embedders.calibrated import read_calibrated
    from remem.embedders.registry import BUNDLED_MODEL

    models = args.models or Path(tempfile.mkdtemp(prefix="remem-session-load-"))
    directory = build_cache(models)
    (graph,) = directory.glob("model.int8c.optimized-*.onnx")
    source = directory / "model.int8c.onnx"
    record = read_calibrated(ModelCache(models), BUNDLED_MODEL)
    assert record is not None

    def mapped() -> Any:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
        return ort.InferenceSession(str(graph), sess_options=options, providers=["CPUExecutionProvider"])

    def verified() -> Any:
        sessions.load_session.cache_clear()
        return sessions.load_session(str(source), 1, str(directory), record.sha256)

    def hash_only() -> Any:
        files = (graph, sessions.weights_file(graph))
        return [hashlib.sha256(path.read_bytes()).hexdigest() for path in files]

    def optimise() -> Any:
        return sessions._session(source.read_bytes(), 1, optimise=True, name=str(source))

    ways: dict[str, Callable[[], Any]] = {
        "mapped (before)": mapped,
        "verified (now)": verified,
        "hash only": hash_only,
        "optimise": optimise,
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.runs):
        for name, way in ways.items():
            started = time.perf_counter()
            way()
            times[name].append((time.perf_counter() - started) * 1000)
    print(f"{'session of the cached graph':<28} {'median ms':>10} {'min ms':>8}")
    for name, values in times.items():
        print(f"{name:<28} {statistics.median(values):>10.1f} {min(values):>8.1f}")


if __name__ == "__main__":
    main()
