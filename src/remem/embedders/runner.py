"""Run an ONNX sentence encoder: tokenise, batch by length, pad dynamically, pool, normalise."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from remem.arrays import FloatArray
from remem.embedders.base import DocumentEmbeddings, Embeddings
from remem.embedders.pooling import pool
from remem.embedders.spec import ModelFiles, ModelSpec
from remem.embedders.windows import split_windows
from remem.errors import EmbedderError
from remem.types import ModelInfo

if TYPE_CHECKING:
    from tokenizers import Tokenizer

IntArray = npt.NDArray[np.int64]

DEFAULT_BATCH_SIZE = 32


@dataclass(frozen=True)
class _Tokens:
    ids: list[int]
    dropped: int


@functools.lru_cache(maxsize=4)
def _load_tokenizer(path: str) -> Tokenizer:
    from tokenizers import Tokenizer  # noqa: PLC0415 - lazy: not needed by list/export

    try:
        tokenizer = Tokenizer.from_file(path)
    except Exception as exc:  # tokenizers raises plain Exception subclasses
        raise EmbedderError(f"cannot load tokenizer {path}: {exc}") from exc
    tokenizer.no_truncation()  # the shipped file pads and cuts at a fixed 128; we do our own
    tokenizer.no_padding()
    return tokenizer


@functools.lru_cache(maxsize=4)
def _load_session(path: str, threads: int) -> Any:
    import onnxruntime as ort  # noqa: PLC0415 - lazy: heavy import

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    if threads > 0:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    try:
        # SkipLayerNorm fusion makes these small encoders slower on the CPU (bench/embed.py: +7% for the
        # bundled model with identical vectors, +14-25% for the int8 variant).
        return ort.InferenceSession(
            path,
            sess_options=options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=["SkipLayerNormFusion"],
        )
    except Exception as exc:  # onnxruntime raises its own untyped errors
        raise EmbedderError(f"cannot load ONNX model {path}: {exc}") from exc


class OnnxEmbedder:
    """Embeds texts with one model on the CPU. Loading is lazy; instances are cheap to create."""

    def __init__(
        self, spec: ModelSpec, files: ModelFiles, *, batch_size: int = DEFAULT_BATCH_SIZE, threads: int = 0
    ) -> None:
        """Bind a model description to its files; ``threads=0`` lets onnxruntime choose."""
        if batch_size < 1:
            raise EmbedderError("batch size must be at least 1")
        self.spec = spec
        self.files = files
        self._batch_size = batch_size
        self._threads = threads

    @property
    def info(self) -> ModelInfo:
        """The model's identity, as a store records it (the sha256 is the original file's, also
        when an optimized variant runs)."""
        spec = self.spec
        return ModelInfo(spec.name, spec.dim, spec.pooling.value, spec.model_sha256)

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages the model was trained for (empty: unknown)."""
        return self.spec.languages

    def embed_documents(self, texts: Sequence[str]) -> DocumentEmbeddings:
        """Vectors for texts to be stored (no query prefix): one per window, the whole text covered."""
        if not texts:
            return DocumentEmbeddings(())
        per_text = [split_windows(ids, self.spec.max_tokens) for ids in self._token_ids(texts)]
        flat = [window for windows in per_text for window in windows]
        vectors = self._run_all(flat)
        bounds = np.cumsum([0, *(len(windows) for windows in per_text)])
        return DocumentEmbeddings(tuple(vectors[a:b] for a, b in itertools.pairwise(bounds)))

    def embed_queries(self, texts: Sequence[str]) -> Embeddings:
        """One vector per search query, the model's query prefix prepended; cut to the window."""
        return self._embed([self.spec.query_prefix + text for text in texts])

    def count_tokens(self, text: str) -> int:
        """Tokens the model would see for ``text`` without a window limit, [CLS] and [SEP] included."""
        return len(self._tokenizer().encode(text).ids)

    def _tokenizer(self) -> Tokenizer:
        return _load_tokenizer(str(self.files.tokenizer))

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self._tokenizer().encode_batch(list(texts))]

    def _tokenize(self, texts: Sequence[str]) -> list[_Tokens]:
        window = self.spec.max_tokens
        tokens = []
        for full in self._token_ids(texts):
            dropped = max(0, len(full) - window)
            ids = [*full[: window - 1], full[-1]] if dropped else full  # keep the closing [SEP]
            tokens.append(_Tokens(ids=ids, dropped=dropped))
        return tokens

    def _embed(self, texts: Sequence[str]) -> Embeddings:
        if not texts:
            return Embeddings(np.zeros((0, self.spec.dim), dtype=np.float32), ())
        tokens = self._tokenize(texts)
        return Embeddings(self._run_all([t.ids for t in tokens]), tuple(t.dropped for t in tokens))

    def _run_all(self, sequences: list[list[int]]) -> FloatArray:
        """Vectors of token sequences (rows in input order), run in length-sorted batches."""
        order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
        vectors = np.empty((len(sequences), self.spec.dim), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            vectors[batch] = self._run_batch([sequences[i] for i in batch])
        return vectors

    def _run_batch(self, batch_ids: list[list[int]]) -> FloatArray:
        session = _load_session(str(self.files.model), self._threads)
        input_ids, attention_mask = pad_batch(batch_ids)
        feeds = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        declared = {graph_input.name for graph_input in session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - declared
        if missing:
            raise EmbedderError(f"{self.files.model} lacks the inputs {sorted(missing)}")
        (hidden, *_) = session.run(None, {name: feeds[name] for name in declared if name in feeds})
        if hidden.ndim != 3 or hidden.shape[2] != self.spec.dim:
            raise EmbedderError(
                f"{self.files.model} returned shape {hidden.shape}, expected (batch, tokens, {self.spec.dim})"
            )
        return pool(self.spec.pooling, hidden, attention_mask)


def pad_batch(batch_ids: Sequence[Sequence[int]]) -> tuple[IntArray, IntArray]:
    """Right-pad token id lists to the longest in the batch: (input_ids, attention_mask), int64."""
    width = max(len(ids) for ids in batch_ids)
    input_ids = np.zeros((len(batch_ids), width), dtype=np.int64)
    attention_mask = np.zeros((len(batch_ids), width), dtype=np.int64)
    for row, ids in enumerate(batch_ids):
        input_ids[row, : len(ids)] = ids
        attention_mask[row, : len(ids)] = 1
    return input_ids, attention_mask
