"""Frozen descriptions of embedding models: everything that decides what a vector means."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from remem.errors import EmbedderError


class Pooling(str, Enum):
    """How token vectors become one sentence vector."""

    MEAN = "mean"  # average of the token vectors under the attention mask (sentence-transformers)
    CLS = "cls"  # the first ([CLS]) token's vector (BGE)


@dataclass(frozen=True)
class ModelSpec:
    """What a model is: two specs with equal fields produce interchangeable vectors.

    ``query_prefix`` is prepended to search queries only, never to stored documents.
    ``max_tokens`` is the model window including the [CLS] and [SEP] tokens.
    """

    name: str
    dim: int
    pooling: Pooling
    max_tokens: int
    model_sha256: str
    tokenizer_sha256: str
    license: str
    source: str
    query_prefix: str = ""


@dataclass(frozen=True)
class ModelFiles:
    """Where a model's files are on this machine."""

    model: Path
    tokenizer: Path


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in chunks; raises EmbedderError if it cannot be read."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise EmbedderError(f"cannot read model file {path}: {exc.strerror or exc}") from exc
    return digest.hexdigest()


def verify_model_files(spec: ModelSpec, files: ModelFiles) -> str:
    """Check both files against the spec's pinned sha256; return the model file's sha256.

    Raises EmbedderError naming the file when either is missing or has other bytes.
    """
    for path, expected in ((files.model, spec.model_sha256), (files.tokenizer, spec.tokenizer_sha256)):
        actual = file_sha256(path)
        if actual != expected:
            raise EmbedderError(
                f"{path} is damaged or not the {spec.name} file it should be "
                f"(sha256 {actual[:12]}…, expected {expected[:12]}…); reinstall remem"
            )
    return spec.model_sha256
