"""onnxruntime sessions, made only from verified bytes and loaded once per process.

Every session is made from a model file's bytes, read into memory once and hashed: onnxruntime is
given those bytes only when their sha256 is the one pinned for the file (``registry.py``, or the
user's own model's, hashed when it was described), never a path, so it maps no file: a file damaged
or cut short under a running process changes neither its vectors nor kills it (no SIGBUS).
onnxruntime optimises the graph as it loads it (all levels; the files remem ships already hold the
fusions it cannot find itself, ``tools/modelbuild``), nothing is written anywhere. (The retired
bench/session_load.py, 2-core AMD EPYC at load 16: a session of the bundled model in 478 ms median,
192 of them reading and hashing, 404 without optimisation: a cached optimised graph would save
little.)
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from remem.embedders.spec import verified_bytes
from remem.errors import EmbedderError

#: SkipLayerNorm fusion makes these small encoders slower on the CPU (bench/embed.py: +7% for the
#: bundled model with identical vectors, +14-25% for the int8 graphs).
_DISABLED_OPTIMIZERS = ["SkipLayerNormFusion"]


@functools.lru_cache(maxsize=4)
def load_session(path: str, threads: int, sha256: str) -> Any:
    """The process's CPU session of the ONNX file at ``path`` (``threads=0``: onnxruntime chooses),
    made from its bytes only when their sha256 is ``sha256``; EmbedderError when the file cannot be
    read, is damaged, or cannot be loaded."""
    return session_of(verified_bytes(Path(path), sha256), threads, name=path)


def session_of(model: bytes, threads: int, *, name: str) -> Any:
    """An onnxruntime CPU session of a serialised model (``name`` says where it came from in an
    error); EmbedderError when onnxruntime cannot load it."""
    import onnxruntime as ort  # noqa: PLC0415 - lazy: heavy import

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    if threads > 0:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    try:
        session = ort.InferenceSession(
            model,
            sess_options=options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=_DISABLED_OPTIMIZERS,
        )
    except Exception as exc:  # onnxruntime raises its own untyped errors
        raise EmbedderError(f"cannot load ONNX model {name}: {exc}") from exc
    _let_go_of_bytes(session)
    return session


def _let_go_of_bytes(session: Any) -> None:
    """onnxruntime's Python wrapper keeps the serialised model for the session's whole life, only to
    make the session again if its providers are changed (remem never does): 77 MB held for nothing
    with multilingual-e5-small. The session's weights are its own copy, so the bytes are let go."""
    if isinstance(getattr(session, "_model_bytes", None), bytes):
        session._model_bytes = None
