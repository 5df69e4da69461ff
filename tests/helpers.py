"""Shared test helpers: a deterministic fake embedder and an in-process CLI runner."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from typer.testing import CliRunner

from remem.cli import main
from remem.index import Filters, Hit, MemoryStore, ModelStamp

FAKE_DIM = 64
FAKE_MODEL = ModelStamp(name="fake-bag-of-words", dim=FAKE_DIM, pooling="mean", sha256="f" * 64)


def fake_vector(text: str, dim: int = FAKE_DIM) -> np.ndarray:
    """A unit vector from hashed lower-cased words: texts sharing words are close, deterministic."""
    vector = np.zeros(dim, dtype=np.float32)
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "little") % dim] += 1.0 if digest[4] % 2 else -1.0
    norm = float(np.linalg.norm(vector))
    if norm == 0.0:
        vector[0] = 1.0
        return vector
    return vector / norm


@dataclass(frozen=True)
class Outcome:
    """What one CLI run produced."""

    code: int
    stdout: str
    stderr: str


def run_cli(args: list[str], store: Path | None = None, stdin: bytes | str | None = None) -> Outcome:
    """Run ``remem ARGS`` in this process (with ``--store`` when given) and capture its output."""
    argv = [*args, "--store", str(store)] if store is not None else list(args)
    with CliRunner().isolation(input=stdin) as (out, err, _):
        code = main(argv)
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return Outcome(code, stdout, stderr)


def vector_search(
    store: MemoryStore, vector: np.ndarray | None, k: int, filters: Filters, **options: Any
) -> list[Hit]:
    """The hits of a vector-mode search (no query text)."""
    return store.search("", vector, k, filters, **options).hits
