"""JSON output is strict (issue 15 #11): a NaN or infinite score is null, never a bare NaN."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

import helpers
from helpers import run_cli
from remem.embedders.base import Embeddings
from remem.testing import FakeEmbedder


def _strict(line: str) -> object:
    def refuse(constant: str) -> object:
        raise ValueError(f"bare {constant} in JSON output")

    return json.loads(line, parse_constant=refuse)


class _NanQueries(FakeEmbedder):
    """A model whose query vectors are NaN (a broken custom model): every cosine is NaN."""

    def embed_queries(self, texts: Sequence[str]) -> Embeddings:
        found = super().embed_queries(texts)
        return Embeddings(np.full_like(found.vectors, np.nan), found.dropped_tokens)


def test_a_nan_score_never_reaches_json_output_as_bare_nan(
    two: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(helpers.CLI, "embedder", _NanQueries())
    for args in (["search", "--json", "sink"], ["search", "--json", "--mode", "vector", "sink"]):
        result = run_cli(args, two)
        assert result.code in (0, 1) and "unexpected" not in result.stderr
        records = [_strict(line) for line in result.stdout.splitlines()]
        assert all(isinstance(r, dict) for r in records)
    context = run_cli(["context", "--json", "sink"], two)
    assert all(_strict(line) for line in context.stdout.splitlines())


def test_json_lines_are_strict() -> None:
    from remem import render

    line = render.json_line({"score": math.nan, "lanes": {"vector": {"score": math.inf}}, "x": [-math.inf]})
    assert _strict(line) == {"score": None, "lanes": {"vector": {"score": None}}, "x": [None]}
