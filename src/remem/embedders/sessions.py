"""onnxruntime sessions: loaded once per process, the optimised graph cached on disk when asked.

Creating a session spends most of its time optimising the graph (fusing layer norms, quantised
MatMuls…). With a ``graph_dir`` the optimised graph is saved there the first time and loaded as is
afterwards, with optimisation off, its weights in a file beside it that onnxruntime maps into
memory (a session then loads in about 17 ms instead of 45). Before onnxruntime optimises it, remem
fuses the attention blocks and GELUs it recognises (``fusion.py``) and keeps that only if the
vectors agree with the unfused graph's. onnxruntime's fused kernels depend on its version and on
the CPU's instruction set, so the cached file's name carries a key of both (and of the source
file's size and mtime and of the cache's form); where the CPU's flags cannot be read, nothing is
cached.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import platform
import shutil
import tempfile
from pathlib import Path
from typing import Any

from remem.errors import EmbedderError

#: SkipLayerNorm fusion makes these small encoders slower on the CPU (bench/embed.py: +7% for the
#: bundled model with identical vectors, +14-25% for the int8 variant).
_DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]

#: Part of a cached graph's key: changed whenever ``fusion.py`` rewrites graphs differently or the
#: cached files change form (2: the weights in a file of their own).
_CACHE_VERSION = "fusion-1, weights-2"


@functools.lru_cache(maxsize=4)
def load_session(path: str, threads: int, graph_dir: str | None = None) -> Any:
    """A CPU session for the ONNX file at ``path`` (``threads=0``: onnxruntime chooses), its optimised
    graph cached in ``graph_dir`` when given; EmbedderError when the file cannot be loaded."""
    import onnxruntime as ort  # noqa: PLC0415 - lazy: heavy import

    cached = None if graph_dir is None else cached_graph(Path(graph_dir), Path(path), ort.__version__)
    if cached is not None and cached.is_file():
        with contextlib.suppress(EmbedderError):  # stale or damaged: optimise the source again
            return _session(str(cached), threads, optimise=False)
    if cached is None:
        return _session(path, threads, optimise=True)
    return _session_saving(path, threads, cached)


def cached_graph(graph_dir: Path, source: Path, runtime: str) -> Path | None:
    """Where the optimised graph of ``source`` is cached for this onnxruntime and CPU; None when the
    CPU's instruction set is not known here (nothing is cached then)."""
    flags = _cpu_flags()
    try:
        stat = source.stat()
    except OSError:
        return None
    if flags is None:
        return None
    key = f"{runtime}|{platform.machine()}|{flags}|{stat.st_size}|{stat.st_mtime_ns}|{_CACHE_VERSION}"
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
    """The file beside a cached graph that holds its weights (onnxruntime maps it into memory)."""
    return graph.with_suffix(".data")


def _session_saving(path: str, threads: int, cached: Path) -> Any:
    """Optimise ``path`` into a session and save the optimised graph as ``cached``, its weights in
    ``weights_file(cached)``: written in a private directory, the weights moved into place before
    the graph (a reader finds the graph only once both are there). A directory that cannot be
    written to only means nothing is cached."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{cached.stem}.", dir=cached.parent))
    except OSError:
        return _session(path, threads, optimise=True)
    save_to = str(staging / cached.name)
    try:
        session = _fused_session(path, threads, save_to) or _session(
            path, threads, optimise=True, save_to=save_to
        )
        for written in (weights_file(cached), cached):
            os.chmod(staging / written.name, 0o644)
            os.replace(staging / written.name, written)
    except OSError:
        pass  # the session is fine; only the cache could not be written
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return session


def _fused_session(path: str, threads: int, save_to: str) -> Any:
    """A session of ``path`` with remem's fusions, its optimised graph saved to ``save_to``; None when
    nothing could be fused or the fused graph's vectors differ from the unfused graph's."""
    from remem.embedders.fusion import fuse_encoder, outputs_agree  # noqa: PLC0415

    try:
        import onnx  # noqa: PLC0415 - lazy: only needed to rewrite a graph, once per cache
    except ImportError:
        return None
    try:
        model = onnx.load(path)
        if not fuse_encoder(model):
            return None
        fused = _session(model.SerializeToString(), threads, optimise=True, save_to=save_to, name=path)
        return fused if outputs_agree(_session(path, threads, optimise=True), fused) else None
    except Exception:  # an optional speed-up: whatever fails, the graph is used as it is
        return None


def _session(
    source: str | bytes, threads: int, *, optimise: bool, save_to: str | None = None, name: str = ""
) -> Any:
    """An onnxruntime CPU session of a file (or of a serialised model ``source`` read from ``name``)."""
    import onnxruntime as ort  # noqa: PLC0415 - lazy: heavy import

    options = ort.SessionOptions()
    options.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimise else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    options.log_severity_level = 3
    if threads > 0:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if save_to is not None:  # the weights in a file of their own: loading maps it instead of parsing it
        options.optimized_model_filepath = save_to
        prefix = "session.optimized_model_external_initializers_"
        options.add_session_config_entry(prefix + "file_name", weights_file(Path(save_to)).name)
        options.add_session_config_entry(prefix + "min_size_in_bytes", "1024")
    try:
        return ort.InferenceSession(
            source,
            sess_options=options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=_DISABLED_OPTIMIZERS if optimise else [],
        )
    except Exception as exc:  # onnxruntime raises its own untyped errors
        raise EmbedderError(f"cannot load ONNX model {name or source!s}: {exc}") from exc
