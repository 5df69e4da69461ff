"""The int8 per-channel variant: built from the real bundled model, it loads, agrees, and fails cleanly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from remem.embedders import optimize
from remem.embedders.optimize import (
    AGREEMENT_SENTENCES,
    MIN_AGREEMENT,
    build_int8_variant,
    mean_agreement,
)
from remem.embedders.registry import ALL_MINILM_L6_V2, bundled_files
from remem.embedders.runner import OnnxEmbedder
from remem.embedders.spec import ModelFiles, file_sha256
from remem.embedders.variants import variant_embedder
from remem.errors import EmbedderError


@pytest.fixture(scope="session")
def bundled() -> ModelFiles:
    return bundled_files()


@pytest.fixture(scope="session")
def variant(bundled: ModelFiles, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The variant of the bundled model, built once for the whole session (a few seconds)."""
    dest = tmp_path_factory.mktemp("variant") / "model.int8.onnx"
    build_int8_variant(bundled.model, dest)
    return dest


def _vectors(files: ModelFiles, texts: tuple[str, ...]) -> np.ndarray:
    return (
        OnnxEmbedder(ALL_MINILM_L6_V2, files, file_sha256=file_sha256(files.model))
        .embed_queries(texts)
        .vectors
    )


def test_variant_is_an_integer_model_that_loads(variant: Path) -> None:
    assert [p.name for p in variant.parent.iterdir()] == [variant.name]  # no temporary file left
    session = ort.InferenceSession(str(variant), providers=["CPUExecutionProvider"])
    assert {i.name for i in session.get_inputs()} >= {"input_ids", "attention_mask"}
    ops = {node.op_type for node in onnx.load(str(variant)).graph.node}
    assert "MatMulInteger" in ops or "DynamicQuantizeMatMul" in ops
    assert "IsNaN" not in ops  # the softmax NaN guards are gone
    assert variant.stat().st_size < 30_000_000  # int8 MatMul weights and int8 embedding rows


def test_variant_agrees_with_the_bundled_model(bundled: ModelFiles, variant: Path) -> None:
    reference = _vectors(bundled, AGREEMENT_SENTENCES)
    run_as_remem_runs_it = variant_embedder(  # one text per run: batched, a text's vector would depend
        ALL_MINILM_L6_V2,  # on its neighbours ("ok" in a batch of 32: 0.9697 on an AVX2 CPU)
        ModelFiles(model=variant, tokenizer=bundled.tokenizer),
        file_sha256=file_sha256(variant),
    )
    candidate = run_as_remem_runs_it.embed_queries(AGREEMENT_SENTENCES).vectors
    assert mean_agreement(reference, candidate) >= MIN_AGREEMENT
    # The worst sentence is "ok" (3 tokens: one int8 scale for very few activations). Measured, one text
    # per run: 0.9721 with onnxruntime 1.20.1 and 1.32.0 on an AVX2 CPU without VNNI (whose u8×s8 kernel
    # saturates pairs of products at int16), 0.9769 with the MatMuls done exactly (in float32).
    assert float(np.min(np.sum(reference * candidate, axis=1))) > 0.97


def test_agreement_sentences_are_varied_and_fit_the_window(bundled: ModelFiles) -> None:
    embedder = OnnxEmbedder(ALL_MINILM_L6_V2, bundled)
    counts = [embedder.count_tokens(text) for text in AGREEMENT_SENTENCES]
    assert 30 <= len(set(AGREEMENT_SENTENCES)) == len(AGREEMENT_SENTENCES) <= 60
    assert min(counts) <= 4 and 100 <= max(counts) <= ALL_MINILM_L6_V2.max_tokens


def test_garbage_source_raises_and_leaves_nothing(tmp_path: Path) -> None:
    source = tmp_path / "garbage.onnx"
    source.write_bytes(b"\x08\x07this is not an ONNX model\xff\x00" * 100)
    out = tmp_path / "out"
    with pytest.raises(EmbedderError, match=r"garbage\.onnx"):
        build_int8_variant(source, out / "model.int8.onnx")
    assert not out.exists() or list(out.iterdir()) == []


def test_missing_source_raises(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError):
        build_int8_variant(tmp_path / "absent.onnx", tmp_path / "model.int8.onnx")
    assert list(tmp_path.iterdir()) == []


def _tiny_model(path: Path, *, with_matmul: bool = True) -> np.ndarray:
    """x (1, 4) @ DequantizeLinear(int8 weight, per-column scales): returns the float weight."""
    rng = np.random.default_rng(0)
    quantized = rng.integers(-127, 128, size=(4, 3), dtype=np.int8)
    scales = np.array([0.01, 0.02, 0.03], dtype=np.float32)
    dequantize = helper.make_node("DequantizeLinear", ["w_q", "w_scale"], ["w"], axis=1)
    last = (
        helper.make_node("MatMul", ["x", "w"], ["y"])
        if with_matmul
        else helper.make_node("Add", ["w", "w"], ["y"])
    )
    graph = helper.make_graph(
        [dequantize, last],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3] if with_matmul else [4, 3])],
        [numpy_helper.from_array(quantized, "w_q"), numpy_helper.from_array(scales, "w_scale")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(path))
    return quantized.astype(np.float32) * scales


def test_dequantize_linear_weights_are_folded_then_quantized(tmp_path: Path) -> None:
    weight = _tiny_model(tmp_path / "tiny.onnx")
    build_int8_variant(tmp_path / "tiny.onnx", tmp_path / "tiny.int8.onnx")
    graph = onnx.load(str(tmp_path / "tiny.int8.onnx")).graph
    assert "DequantizeLinear" not in {node.op_type for node in graph.node}
    x = np.array([[0.5, -1.0, 2.0, 0.25]], dtype=np.float32)
    session = ort.InferenceSession(str(tmp_path / "tiny.int8.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"x": x})[0], x @ weight, atol=0.05)


def test_model_without_matmul_is_refused(tmp_path: Path) -> None:
    _tiny_model(tmp_path / "tiny.onnx", with_matmul=False)
    with pytest.raises(EmbedderError, match="no MatMul"):
        build_int8_variant(tmp_path / "tiny.onnx", tmp_path / "tiny.int8.onnx")


def test_failed_quantization_keeps_the_old_dest_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tiny_model(tmp_path / "tiny.onnx")
    out = tmp_path / "out"
    out.mkdir()
    (out / "tiny.int8.onnx").write_bytes(b"previous variant")

    def half_written(model: onnx.ModelProto, path: Path) -> None:
        path.write_bytes(b"partial")
        raise EmbedderError("quantizer crashed")

    monkeypatch.setattr(optimize, "_save_checked", half_written)
    with pytest.raises(EmbedderError, match="quantizer crashed"):
        build_int8_variant(tmp_path / "tiny.onnx", out / "tiny.int8.onnx")
    assert [p.name for p in out.iterdir()] == ["tiny.int8.onnx"]
    assert (out / "tiny.int8.onnx").read_bytes() == b"previous variant"


def test_mean_agreement_on_hand_made_vectors() -> None:
    a = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    assert mean_agreement(a, a) == pytest.approx(1.0)
    b = np.array([[0.0, 1.0], [0.0, -1.0], [0.8, 0.6]], dtype=np.float32)
    assert mean_agreement(a, b) == pytest.approx((0.0 - 1.0 + 0.96) / 3, abs=1e-6)


@pytest.mark.parametrize(
    ("left", "right"),
    [((3, 2), (2, 2)), ((0, 2), (0, 2)), ((2,), (2,))],
)
def test_mean_agreement_refuses_mismatched_shapes(left: tuple[int, ...], right: tuple[int, ...]) -> None:
    with pytest.raises(EmbedderError):
        mean_agreement(np.zeros(left, np.float32), np.zeros(right, np.float32))
