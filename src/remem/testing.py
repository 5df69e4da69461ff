"""Test support that ships with remem: a deterministic fake embedder that goes through the same
code path as the real model (``remem.open(..., embedder=FakeEmbedder())``), without ONNX."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from remem.embedders.base import DocumentEmbeddings, Embeddings
from remem.types import ModelInfo

if TYPE_CHECKING:
    from remem.arrays import FloatArray

FAKE_DIM = 64
FAKE_MODEL = ModelInfo(name="fake-bag-of-words", dim=FAKE_DIM, pooling="mean", sha256="f" * 64)
_WORD = re.compile(r"\w+")


def fake_vector(text: str, dim: int = FAKE_DIM) -> FloatArray:
    """A unit vector from hashed lower-cased words: texts sharing words are close, deterministic."""
    import numpy as np  # noqa: PLC0415

    vector = np.zeros(dim, dtype=np.float32)
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "little") % dim] += 1.0 if digest[4] % 2 else -1.0
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    unit: FloatArray = vector / norm
    return unit


class FakeEmbedder:
    """A bag-of-words embedder: every text is one window; queries are cut at ``max_words`` words
    (the rest reported as dropped tokens). Counts its calls in ``calls``."""

    def __init__(
        self, info: ModelInfo = FAKE_MODEL, max_words: int = 256, languages: tuple[str, ...] = ()
    ) -> None:
        """Embed as the model ``info`` (its ``dim`` is used), declaring ``languages`` (default:
        none, so no cross-script rule applies; ``("en",)`` acts as an English-only model)."""
        self._info = info
        self.languages = languages
        self.max_words = max_words
        self.calls = 0

    @property
    def info(self) -> ModelInfo:
        """The fake model's identity."""
        return self._info

    def embed_documents(self, texts: Sequence[str]) -> DocumentEmbeddings:
        """One (1, dim) window per text."""
        self.calls += 1
        return DocumentEmbeddings(tuple(fake_vector(t, self._info.dim).reshape(1, -1) for t in texts))

    def embed_queries(self, texts: Sequence[str]) -> Embeddings:
        """One vector per query, from its first ``max_words`` words."""
        import numpy as np  # noqa: PLC0415

        self.calls += 1
        words = [_WORD.findall(t) for t in texts]
        vectors = [fake_vector(" ".join(w[: self.max_words]), self._info.dim) for w in words]
        dropped = tuple(max(0, len(w) - self.max_words) for w in words)
        matrix = np.stack(vectors) if vectors else np.zeros((0, self._info.dim), dtype=np.float32)
        return Embeddings(matrix, dropped)
