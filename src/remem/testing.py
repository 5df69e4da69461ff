"""Test support that ships with remem: a deterministic fake embedder that goes through the same
code path as the real model (``remem.open(..., embedder=FakeEmbedder())``), without ONNX; and a
ChatGPT-shaped export of any size (``write_chatgpt_export``) for import tests and benchmarks."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
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


_TOPICS = ("the garden", "a trip to Lisbon", "the tax return", "sourdough", "the bike", "a job offer")
_ASKS = ("What should I do about", "Remind me what we said about", "Can you summarise", "Any ideas for")


def _chat_node(node: str, parent: str | None, role: str, words: str, at: float) -> dict[str, object]:
    message = {
        "id": node,
        "author": {"role": role, "name": None, "metadata": {}},
        "create_time": at,
        "content": {"content_type": "text", "parts": [words]},
        "metadata": {},
    }
    return {"id": node, "parent": parent, "children": [], "message": message}


def chatgpt_conversation(number: int, turns: int, start: float = 1.7e9) -> dict[str, object]:
    """Conversation ``number`` of a ChatGPT-shaped export (``write_chatgpt_export``): a root node
    and ``turns`` user and assistant messages, each text unique, a minute apart."""
    ident = f"conv-{number:07d}"
    mapping: dict[str, dict[str, object]] = {"root": {"id": "root", "parent": None, "children": []}}
    parent = "root"
    for turn in range(turns):
        node, topic = f"{ident}-{turn}", _TOPICS[(number + turn // 2) % len(_TOPICS)]
        if turn % 2 == 0:
            words = f"{_ASKS[turn % len(_ASKS)]} {topic}? It is note {number}.{turn} of this chat."
        else:
            words = f"About {topic}: step {turn} of plan {number} is: write it down, check in {turn} days."
        mapping[node] = _chat_node(
            node, parent, ("user", "assistant")[turn % 2], words, start + number * 3600 + turn * 60
        )
        mapping[parent]["children"] = [node]
        parent = node
    return {
        "id": ident,
        "conversation_id": ident,
        "title": f"Chat {number}",
        "create_time": start + number * 3600,
        "mapping": mapping,
        "current_node": parent,
    }


def write_chatgpt_export(path: str | Path, messages: int, per_conversation: int = 40) -> int:
    """Write a ChatGPT-shaped conversations.json of ``messages`` user and assistant messages in
    conversations of ``per_conversation``, one conversation at a time (never the whole export in
    memory); returns how many messages it holds."""
    with Path(path).open("w", encoding="utf-8") as handle:
        handle.write("[")
        written = number = 0
        while written < messages:
            turns = min(per_conversation, messages - written)
            handle.write(("," if number else "") + "\n" + json.dumps(chatgpt_conversation(number, turns)))
            written, number = written + turns, number + 1
        handle.write("\n]\n")
    return written
