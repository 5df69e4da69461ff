"""The embedder seam: what the core needs from any model that turns texts into unit vectors.

``OnnxEmbedder`` implements it for the ONNX models; ``remem.testing.FakeEmbedder`` for tests; a
caller may pass its own to ``remem.open(..., embedder=...)``. Importing this module loads no numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.types import ModelInfo


@dataclass(frozen=True)
class Embeddings:
    """Unit-length float32 vectors, one row per input text, in input order.

    ``dropped_tokens[i]`` counts the tokens of text i beyond the model window that the
    vector does not cover (0 when the whole text fit).
    """

    vectors: FloatArray
    dropped_tokens: tuple[int, ...]


@dataclass(frozen=True)
class DocumentEmbeddings:
    """Each text's window vectors, in input order: ``windows[i]`` is (w, dim) with w ≥ 1.

    A text within the model window has one vector; a longer one has one per overlapping window
    (see ``remem.embedders.windows``), so nothing of it is left out.
    """

    windows: tuple[FloatArray, ...]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors of one model, identified by ``info`` (the store's model stamp).

    Two embedders with equal ``info`` must produce interchangeable vectors.
    """

    @property
    def info(self) -> ModelInfo:
        """The model's identity: name, dimensions, pooling, sha256 of its weights."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> DocumentEmbeddings:
        """Vectors of texts to store, every part of each text covered (one row per window)."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> Embeddings:
        """One vector per search query (with the model's query prefix), cut to the model window."""
        ...
