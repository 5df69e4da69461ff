"""onnxruntime sessions: made only from verified bytes, loaded once per process, the optimised graph
cached on disk when asked.

Every session is made from bytes read into memory and hashed first: a model file's against the
sha256 its caller knows (pinned, or recorded when its variant was built), a cached graph's against
the record written when it was built. onnxruntime is given those bytes, never a path, so it maps no
file: a file damaged or cut short under a running process changes neither its vectors nor kills it.

Creating a session spends most of its time optimising the graph (fusing layer norms, quantised
MatMuls…). With a ``graph_dir`` the optimised graph is saved there the first time (under the
directory's lock, written in its staging directory), its weights in a file beside it and both files'
sha256 in a third (``sha256sum`` format); afterwards both are read, checked against that record and
given to onnxruntime from memory with optimisation off (bench/session_load.py: a session in about
50-60 ms, 23 of them hashing, against 66-90 to optimise the graph again). A cached graph that does
not match its record is built again. Before onnxruntime optimises it, remem fuses the attention
blocks and GELUs it recognises (``fusion.py``) and keeps that only if the vectors agree with the
unfused graph's. onnxruntime's fused kernels depend on its version and on the CPU's instruction set,
so the cached file's name carries a key of both (and of the source file's sha256 and of the cache's
form); where the CPU's flags cannot be read, or onnxruntime cannot take weights from memory, nothing
is cached.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import platform
from pathlib import Path
from typing import Any

from remem.embedders.spec import file_problem, file_sha256, read_hashed, verified_bytes
from remem.errors import DownloadError, EmbedderError

#: SkipLayerNorm fusion makes these small encoders slower on the CPU (bench/embed.py: +7% for the
#: bundled model with identical vectors, +14-25% for the int8 variant).
_DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]

#: Part of a cached graph's key: changed whenever ``fusion.py`` rewrites graphs differently or the
#: cached files change form (2: the weights in a file of their own; 3: a record of their sha256).
_CACHE_VERSION = "fusion-1, weights-2, verified-3"


@functools.lru_cache(maxsize=4)
def load_session(path: str, threads: int, graph_dir: str | None = None, sha256: str | None = None) -> Any:
    """A CPU session of the ONNX file at ``path`` (``threads=0``: onnxruntime chooses), made from its
    bytes only when their sha256 is ``sha256`` (None: not checked, for tools timing their own files;
    remem's embedders always give it), or from its optimised graph cached in ``graph_dir`` when that
    matches its record (else it is built again); EmbedderError when the file is damaged or cannot be
    loaded."""
    import onnxruntime as ort  # noqa: PLC0415 - lazy: heavy import

    model = None
    if sha256 is None:
        model, sha256 = read_hashed(Path(path))
    cached = None if graph_dir is None else cached_graph(Path(graph_dir), Path(path), sha256, ort.__version__)
    if cached is not None and (session := _cached_session(cached, threads)) is not None:
        return session
    model = model if model is not None else verified_bytes(Path(path), sha256)
    if cached is None:
        return _session(model, threads, optimise=True, name=path)
    return _session_saving(model, path, threads, cached)


def cached_graph(graph_dir: Path, source: Path, sha256: str, runtime: str) -> Path | None:
    """Where the optimised graph of ``source`` (whose bytes have this ``sha256``) is cached for this
    onnxruntime and CPU; None when nothing is cached here (the CPU's instruction set is not known,
    or this onnxruntime cannot take weights from memory)."""
    import onnxruntime as ort  # noqa: PLC0415 - lazy: heavy import

    flags = _cpu_flags()
    if flags is None or not hasattr(ort.SessionOptions, "add_external_initializers_from_files_in_memory"):
        return None
    key = f"{runtime}|{platform.machine()}|{flags}|{sha256}|{_CACHE_VERSION}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return graph_dir / f"{source.stem}.optimized-{digest}.onnx"


@functools.lru_cache(maxsize=1)
def _cpu_flags() -> str | None:
    """The CPU's feature flags (Linux /proc/cpuinfo), or None where they cannot be read."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith(("flags", "Features")):
                    return " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        return None
    return None


def weights_file(graph: Path) -> Path:
    """The file beside a cached graph that holds its weights."""
    return graph.with_suffix(".data")


def record_file(graph: Path) -> Path:
    """The file beside a cached graph that records its and its weights' sha256 (``sha256sum`` form)."""
    return graph.with_suffix(".sha256")


def graph_problems(directory: Path) -> list[str]:
    """What is wrong with each optimised graph cached in ``directory`` (its files re-hashed against
    its record), one line each; empty when all are intact."""
    problems = []
    for record in sorted(directory.glob("*.optimized-*.sha256")):
        graph = record.with_suffix(".onnx")
        expected = _recorded(graph) or ("?", "?")
        for path, sha256 in zip((graph, weights_file(graph)), expected, strict=True):
            if (problem := file_problem(path, sha256)) is not None:
                problems.append(problem)
    return problems


def _recorded(graph: Path) -> tuple[str, str] | None:
    """The sha256 recorded for a cached graph and for its weights, or None without a readable record."""
    try:
        lines = record_file(graph).read_text(encoding="ascii").split("\n")
        return lines[0].split()[0], lines[1].split()[0]
    except (OSError, ValueError, IndexError):
        return None


def _cached_session(cached: Path, threads: int) -> Any:
    """A session of a cached graph and its weights when both match their record; None when either is
    missing or damaged (it is built again then)."""
    expected = _recorded(cached)
    if expected is None:
        return None
    try:
        graph, weights = cached.read_bytes(), weights_file(cached).read_bytes()
    except OSError:
        return None
    if (hashlib.sha256(graph).hexdigest(), hashlib.sha256(weights).hexdigest()) != expected:
        return None
    with contextlib.suppress(EmbedderError):
        named_weights = (weights_file(cached).name, weights)
        return _session(graph, threads, optimise=False, weights=named_weights, name=str(cached))
    return None


def _session_saving(model: bytes, name: str, threads: int, cached: Path) -> Any:
    """Optimise ``model`` (read from ``name``) into a session and save the optimised graph as
    ``cached``, its weights in ``weights_file(cached)`` and their sha256 in ``record_file(cached)``:
    under the directory's lock, written in its staging directory and moved into place record last.
    A directory that cannot be written to only means nothing is cached."""
    from remem.embedders.locks import directory_lock, staging  # noqa: PLC0415

    try:
        with directory_lock(cached.parent), staging(cached.parent) as area:
            if (session := _cached_session(cached, threads)) is not None:
                return session  # another process built it meanwhile
            save_to = area / cached.name
            session = _fused_session(model, name, threads, save_to) or _session(
                model, threads, optimise=True, save_to=save_to, name=name
            )
            with contextlib.suppress(OSError, EmbedderError):  # the session is fine; only the cache is not
                _install(save_to, cached)
            return session
    except (OSError, DownloadError):  # no lock or staging directory here: nothing is cached
        return _session(model, threads, optimise=True, name=name)


def _install(saved: Path, cached: Path) -> None:
    """Record the sha256 of a saved graph and its weights, then move the three files into place."""
    parts = (saved, weights_file(saved))
    record_file(saved).write_text("".join(f"{file_sha256(p)}  {p.name}\n" for p in parts), encoding="ascii")
    for written in (*parts, record_file(saved)):  # the record last: without it the others are unused
        os.chmod(written, 0o644)
        os.replace(written, cached.parent / written.name)


def _fused_session(model: bytes, name: str, threads: int, save_to: Path) -> Any:
    """A session of ``model`` with remem's fusions, its optimised graph saved to ``save_to``; None
    when nothing could be fused or the fused graph's vectors differ from the unfused graph's."""
    from remem.embedders.fusion import fuse_encoder, outputs_agree  # noqa: PLC0415

    try:
        import onnx  # noqa: PLC0415 - lazy: only needed to rewrite a graph, once per cache
    except ImportError:
        return None
    try:
        graph = onnx.load_model_from_string(model)
        if not fuse_encoder(graph):
            return None
        fused = _session(graph.SerializeToString(), threads, optimise=True, save_to=save_to, name=name)
        return fused if outputs_agree(_session(model, threads, optimise=True, name=name), fused) else None
    except Exception:  # an optional speed-up: whatever fails, the graph is used as it is
        return None


def _session(
    model: bytes,
    threads: int,
    *,
    optimise: bool,
    name: str,
    save_to: Path | None = None,
    weights: tuple[str, bytes] | None = None,
) -> Any:
    """An onnxruntime CPU session of a serialised model read from ``name`` (``weights``: the file its
    weights are in, by name, and its bytes), its optimised graph saved to ``save_to`` when given."""
    import onnxruntime as ort  # noqa: PLC0415 - lazy: heavy import

    options = ort.SessionOptions()
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimise else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    options.log_severity_level = 3
    if threads > 0:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if save_to is not None:  # the weights in a file of their own: they load without being parsed
        options.optimized_model_filepath = str(save_to)
        prefix = "session.optimized_model_external_initializers_"
        options.add_session_config_entry(prefix + "file_name", weights_file(save_to).name)
        options.add_session_config_entry(prefix + "min_size_in_bytes", "1024")
    if weights is not None:  # onnxruntime copies them while it makes the session
        options.add_external_initializers_from_files_in_memory([weights[0]], [weights[1]], [len(weights[1])])
    try:
        return ort.InferenceSession(
            model,
            sess_options=options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=_DISABLED_OPTIMIZERS if optimise else [],
        )
    except Exception as exc:  # onnxruntime raises its own untyped errors
        raise EmbedderError(f"cannot load ONNX model {name}: {exc}") from exc
