"""The calibrated variant (modelbuild/activations.py, build step 2): fixed activation scales from the
ranges remem ships for the variant it builds, so a window's vector is the same in any batch."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import onnx
import pytest

from modelbuild.activations import calibrate, ranges_for
from modelbuild.build import CALIBRATED_IDENTITY, UPSTREAM_SHA256
from modelbuild.fusion import fuse_encoder
from modelbuild.variant import make_calibrated
from remem.embedders.registry import ALL_MINILM_L6_V2, bundled_tokenizer
from remem.embedders.runner import OnnxEmbedder, uniform_batches
from remem.embedders.spec import ModelFiles
from remem.errors import EmbedderError

TEXTS = [
    "ok",
    "Lunch is at noon on Fridays",
    "Dinner is at six on Mondays",
    "Bob is allergic to peanuts; avoid them when ordering lunch for the team.",
    "The nightly importer failed with error E1045 while reading the supplier feed, twice in a row.",
    "Lunch is at one on Sundays",
]


def _ops(model: onnx.ModelProto) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in model.graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return counts


def _ranges(identity: str) -> tuple[tuple[str, float, float], ...]:
    ranges = ranges_for(identity)
    assert ranges is not None
    return ranges


def _embedder(path: Path, data: bytes, *, uniform: bool) -> OnnxEmbedder:
    """An embedder of the model file at ``path`` (holding ``data``): uniform batches of windows of one
    length as remem runs its shipped model, or one text per run."""
    path.write_bytes(data)
    files = ModelFiles(model=path, tokenizer=bundled_tokenizer())
    sha256 = hashlib.sha256(data).hexdigest()
    if uniform:
        size = ALL_MINILM_L6_V2.uniform_batch
        return OnnxEmbedder(ALL_MINILM_L6_V2, files, file_sha256=sha256, batch_size=size, uniform=True)
    return OnnxEmbedder(ALL_MINILM_L6_V2, files, file_sha256=sha256, batch_size=1)


def test_the_shipped_ranges_are_for_the_variant_remem_builds(int8_variant: tuple[bytes, str]) -> None:
    data, identity = int8_variant
    ranges = ranges_for(identity)
    assert ranges is not None and len(ranges) == 24  # 6 layers: Q/K/V input, attention output, FFN in, out
    assert ranges_for("0" * 64) is None
    model = onnx.load_from_string(data)
    assert make_calibrated(model, ranges) == CALIBRATED_IDENTITY
    ops = _ops(model)
    assert "DynamicQuantizeLinear" not in ops and "MatMulInteger" not in ops
    assert (ops["QuantizeLinear"], ops["MatMulIntegerToFloat"]) == (24, 36)
    onnx.checker.check_model(model)
    assert fuse_encoder(model) == 12  # attention (head width from the fused bias) and GELU


def test_an_activation_without_a_range_is_refused(int8_variant: tuple[bytes, str]) -> None:
    data, identity = int8_variant
    ranges = _ranges(identity)
    with pytest.raises(ValueError, match="no range for the activation gelu_5"):
        calibrate(onnx.load_from_string(data), ranges[:-1])
    with pytest.raises(EmbedderError, match=r"cannot calibrate.*no range for the activation layer_norm$"):
        make_calibrated(onnx.load_from_string(data), ranges[1:])


@pytest.mark.parametrize("fused", [False, True], ids=["calibrated", "calibrated-and-fused"])
def test_a_window_has_one_vector_whatever_runs_beside_it(
    upstream: Path, int8_variant: tuple[bytes, str], tmp_path: Path, fused: bool
) -> None:
    data, identity = int8_variant
    model = onnx.load_from_string(data)
    make_calibrated(model, _ranges(identity))
    if fused:
        assert fuse_encoder(model) == 12
    embedder = _embedder(tmp_path / "calibrated.onnx", model.SerializeToString(), uniform=True)
    ids = embedder._token_ids(TEXTS)
    assert any(len(batch) > 1 for batch in uniform_batches(ids, ALL_MINILM_L6_V2.uniform_batch or 1))
    together = embedder.embed_documents(TEXTS).windows
    for text, rows in zip(TEXTS, together, strict=True):
        np.testing.assert_array_equal(embedder.embed_documents([text]).windows[0], rows)
    files = ModelFiles(model=upstream, tokenizer=bundled_tokenizer())
    original = OnnxEmbedder(ALL_MINILM_L6_V2, files, file_sha256=UPSTREAM_SHA256).embed_documents(TEXTS)
    per_run = _embedder(tmp_path / "variant.onnx", data, uniform=False).embed_documents(TEXTS).windows

    def mean_cosine(vectors: tuple[np.ndarray, ...]) -> float:
        return float(np.mean([a[0] @ b[0] for a, b in zip(original.windows, vectors, strict=True)]))

    assert mean_cosine(together) > mean_cosine(per_run) - 0.003  # as close to the original as per-run scales
