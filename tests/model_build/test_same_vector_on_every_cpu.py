"""The same text gives the same vector on every CPU: the shipped file's weights are 7-bit, so no int8
kernel of onnxruntime can saturate, and an AVX2 machine computes what an AVX-512 VNNI machine does.

This machine runs one kind of kernel; the other is written out in plain ONNX (``int8_kernels``). That
written-out AVX2 kernel is first shown to reproduce vectors recorded on a real AVX2 machine.
onnxruntime itself cannot be made to run its AVX2 kernels on a VNNI CPU: MLAS picks them by CPUID,
and onnxruntime 1.32 has no session option or environment variable for it (no ``ORT_DISABLE_AVX512``;
its ``mlas.*`` config keys are for KleidiAI (ARM), LUT GEMM and convolutions).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from helpers import int8_kernels
from int8_kernels import pair_sums, with_kernels
from modelbuild.activations import ranges_for
from modelbuild.build import VARIANT_IDENTITY
from modelbuild.variant import make_calibrated
from remem.embedders.registry import ALL_MINILM_L6_V2, bundled_files, bundled_tokenizer
from remem.embedders.runner import OnnxEmbedder
from remem.embedders.spec import ModelFiles

DATA = Path(__file__).parent.parent / "data"
#: Vectors recorded on an AVX2 machine (no VNNI) from the 8-bit calibrated graph.
AVX2_RECORDED = json.loads((DATA / "minilm_int8c_reference.json").read_text())
#: Short texts whose 8-bit vectors differ between the two kinds of CPU (the written-out kernels
#: hold a (tokens, K/2, N) tensor per MatMul: short texts keep the run to seconds).
TEXTS = ["How did we lay out the checkout screen?", "git rebase -i HEAD~3 and squash the fixup commits"]


def _vectors(tmp_path: Path, data: bytes, texts: list[str]) -> np.ndarray:
    """The query vectors of ``texts`` by the model file ``data``, one text per run, as remem runs it."""
    path = tmp_path / f"{hashlib.sha256(data).hexdigest()[:16]}.onnx"
    path.write_bytes(data)
    files = ModelFiles(model=path, tokenizer=bundled_tokenizer())
    sha256 = hashlib.sha256(data).hexdigest()
    embedder = OnnxEmbedder(ALL_MINILM_L6_V2, files, file_sha256=sha256, batch_size=1)
    return embedder.embed_queries(texts).vectors


def _shipped() -> onnx.ModelProto:
    return onnx.load(str(bundled_files().model))


def test_no_weight_of_the_shipped_file_lets_a_pair_of_products_leave_int16() -> None:
    model = _shipped()
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    matmuls = [node for node in model.graph.node if node.op_type == "MatMulIntegerToFloat"]
    assert len(matmuls) == 36
    for node in matmuls:
        weight, activation_zero = weights[node.input[1]], weights[node.input[4]]
        assert weight.dtype == np.int8 and activation_zero.dtype == np.uint8  # u8 × s8 kernels
        peak = int(np.abs(weight.astype(np.int32)).max())
        assert 2 * 255 * peak <= 32767, f"{node.input[1]}: |w| up to {peak}"


def test_the_written_out_avx2_kernel_reproduces_a_real_avx2_machine(
    tmp_path: Path, int8_variant: tuple[bytes, str]
) -> None:
    model = onnx.load_from_string(int8_variant[0])
    ranges = ranges_for(VARIANT_IDENTITY)
    assert ranges is not None
    make_calibrated(model, ranges)  # the graph the recorded vectors came from
    rows = [AVX2_RECORDED["sentences"].index(text) for text in TEXTS]
    recorded = np.asarray(AVX2_RECORDED["vectors"], dtype=np.float32)[rows]
    avx2 = _vectors(tmp_path, with_kernels(model, saturating=True), TEXTS)
    # the float parts (layer norms, attention, GELU) of the two machines differ in their last bits
    # (measured on 14 sentences: 5.2e-8 at most); the saturated integer sums are the same
    np.testing.assert_allclose(avx2, recorded, atol=1e-6)
    exact = _vectors(tmp_path, with_kernels(model, saturating=False), TEXTS)
    assert np.abs(exact - recorded).max() > 1e-3  # saturation is what the emulation adds


def test_an_avx2_machine_and_a_vnni_machine_give_the_shipped_file_identical_vectors(tmp_path: Path) -> None:
    model = _shipped()
    avx2 = _vectors(tmp_path, with_kernels(model, saturating=True), TEXTS)
    vnni = _vectors(tmp_path, with_kernels(model, saturating=False), TEXTS)
    assert np.array_equal(avx2, vnni)
    if int8_kernels() == "vnni":  # the written-out kernel is this CPU's own arithmetic, bit for bit
        assert np.array_equal(vnni, _vectors(tmp_path, bundled_files().model.read_bytes(), TEXTS))


@pytest.mark.parametrize("weights", [63, 127])
def test_pair_sums_leave_int16_only_past_seven_bits(weights: int) -> None:
    activations = np.full((1, 4), 255, dtype=np.uint8)
    pairs = pair_sums(activations, np.full((4, 2), weights, dtype=np.int8))
    assert pairs.shape == (1, 2, 2)
    assert (pairs.max() > 32767) == (weights == 127)
