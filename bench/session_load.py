"""How long an onnxruntime session of the bundled model takes to make: the shipped file vs the graph
remem used to cache.

    python bench/session_load.py [--runs 15] [--old-graph PATH]

Since issue 25 remem ships its model file already fused and calibrated, and every process makes its
session from the file's bytes: read, hashed against the pinned sha256, optimised by onnxruntime
(``sessions.session_of``, ORT_ENABLE_ALL). Before, each machine saved onnxruntime's optimised graph
once (``model.int8c.optimized-<key>.onnx``, its weights in a ``.data`` file, both hashes in a
``.sha256`` record) and later processes read and hashed both files and loaded them with optimisation
off. This part of `remem search`'s cold start is timed here, interleaved, in this process, one
thread per session (as the shipped embedder's sessions run):

* ``shipped file (now)``: read + sha256 + ``session_of`` — what remem does now;
* ``shipped file, no optimisation``: read + sha256 + a session with optimisation off (the floor a
  cached optimised graph could reach; such a graph depends on onnxruntime's version and the CPU);
* ``old cached graph (before)``: both files read and hashed, a session with optimisation off, the
  weights given from memory — what remem did before, when ``--old-graph`` (default: the recorded
  graph in the user's model cache, if a remem of before left one there) exists;
* ``… hash only``: the reading and hashing part of the above.

Medians and minima in ms.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

OLD_CACHE = Path.home() / ".cache" / "remem" / "models" / "all-minilm-l6-v2" / "bundled"


def plain_session(model: bytes, weights: tuple[str, bytes] | None = None) -> Any:
    """A one-thread CPU session of ``model`` with graph optimisation off (``weights``: an external
    weights file's name and bytes, given from memory as remem did for its cached graph)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    if weights is not None:
        options.add_external_initializers_from_files_in_memory([weights[0]], [weights[1]], [len(weights[1])])
    return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])


def hashed(path: Path) -> bytes:
    """The file's bytes, after computing their sha256 (as every load does)."""
    data = path.read_bytes()
    hashlib.sha256(data).hexdigest()
    return data


def old_graph(given: Path | None) -> Path | None:
    """The cached graph to compare with: ``given``, else the recorded one in the user's cache."""
    if given is not None:
        return given
    records = sorted(OLD_CACHE.glob("model.int8c.optimized-*.sha256"))
    return records[-1].with_suffix(".onnx") if records else None


def main() -> None:
    """Time the ways of making a session and print a table of medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--old-graph", type=Path, help="a cached model.int8c.optimized-*.onnx of before")
    args = parser.parse_args()
    from remem.embedders.registry import bundled_files
    from remem.embedders.sessions import session_of

    shipped = bundled_files().model
    ways: dict[str, Callable[[], Any]] = {
        "shipped file (now)": lambda: session_of(hashed(shipped), 1, name=str(shipped)),
        "shipped file, no optimisation": lambda: plain_session(hashed(shipped)),
        "shipped file, hash only": lambda: hashed(shipped),
    }
    graph = old_graph(args.old_graph)
    if graph is not None:
        weights = graph.with_suffix(".data")
        ways["old cached graph (before)"] = lambda: plain_session(
            hashed(graph), (weights.name, hashed(weights))
        )
        ways["old cached graph, hash only"] = lambda: (hashed(graph), hashed(weights))
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.runs):
        for name, way in ways.items():
            started = time.perf_counter()
            way()
            times[name].append((time.perf_counter() - started) * 1000)
    print(f"old cached graph: {graph or 'none found (give --old-graph)'}")
    print(f"{'session of the bundled model':<32} {'median ms':>10} {'min ms':>8}")
    for name, values in times.items():
        print(f"{name:<32} {statistics.median(values):>10.1f} {min(values):>8.1f}")


if __name__ == "__main__":
    main()
