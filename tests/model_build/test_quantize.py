"""remem's own int8 quantisation (modelbuild/quantize.py): the arithmetic, the shared activation
quantiser, and an identity that follows what a model computes, not how its file was written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from modelbuild.build import VARIANT_IDENTITY
from modelbuild.quantize import model_identity, quantize_matmuls
from modelbuild.variant import load_model, make_int8


def _two_heads(seed: int = 0) -> onnx.ModelProto:
    """y = x @ A, z = x @ B + x @ C: three constant-weight MatMuls reading one activation."""
    rng = np.random.default_rng(seed)
    weights = {name: rng.normal(size=(8, 6)).astype(np.float32) for name in "ABC"}
    weights["C"][:, 2] = 0.0  # an all-zero output channel must not divide by zero
    nodes = [
        helper.make_node("MatMul", ["x", "A"], ["y"], name="first"),
        helper.make_node("MatMul", ["x", "B"], ["b"], name="second"),
        helper.make_node("MatMul", ["x", "C"], ["c"], name="third"),
        helper.make_node("Add", ["b", "c"], ["z"], name="sum"),
    ]
    graph = helper.make_graph(
        nodes,
        "heads",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["n", 6]) for out in ("y", "z")],
        [numpy_helper.from_array(value, name) for name, value in weights.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _int8_kernel_saturates() -> bool:
    """Whether onnxruntime's u8×s8 MatMulInteger kernel on this CPU saturates its pairwise int16
    sums (AVX2 without VNNI: ``vpmaddubsw``): 4 × 255·127 comes back as 65534 instead of 129540.
    There a product of full-range int8 weights is off wherever two neighbouring terms are large."""
    node = helper.make_node("MatMulInteger", ["a", "b"], ["y"])
    graph = helper.make_graph(
        [node],
        "probe",
        [
            helper.make_tensor_value_info("a", TensorProto.UINT8, [1, 4]),
            helper.make_tensor_value_info("b", TensorProto.INT8, [4, 1]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    a, b = np.full((1, 4), 255, np.uint8), np.full((4, 1), 127, np.int8)
    return int(_session(model).run(None, {"a": a, "b": b})[0][0, 0]) != 4 * 255 * 127


def test_quantized_matmuls_compute_the_product_with_one_quantiser_per_activation() -> None:
    if _int8_kernel_saturates():
        pytest.skip(
            "onnxruntime's int8 MatMul saturates on this CPU (AVX2 without VNNI): the product is off "
            "by design of the kernel, not of the quantiser"
        )
    model = _two_heads()
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert quantize_matmuls(model.graph) == 3
    ops = [node.op_type for node in model.graph.node]
    assert ops.count("DynamicQuantizeLinear") == 1 and "MatMul" not in ops
    assert {t.name for t in model.graph.initializer}.isdisjoint(weights)  # float weights are gone
    onnx.checker.check_model(model)
    x = np.random.default_rng(1).normal(size=(5, 8)).astype(np.float32)
    y, z = _session(model).run(None, {"x": x})
    np.testing.assert_allclose(y, x @ weights["A"], atol=0.1)
    np.testing.assert_allclose(z, x @ weights["B"] + x @ weights["C"], atol=0.15)


def test_the_weights_are_symmetric_int8_with_one_scale_per_output_channel() -> None:
    model = _two_heads()
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    quantize_matmuls(model.graph)
    stored = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for name, output in (("A", "y"), ("C", "c")):
        quantized, scales = stored[f"{output}_w8"], stored[f"{output}_wscale"]
        assert quantized.dtype == np.int8 and scales.shape == (6,)
        assert np.abs(quantized).max() == 127 and not np.any(stored[f"{output}_wzero"])
        np.testing.assert_allclose(quantized * scales, weights[name], atol=float(scales.max()) / 2 + 1e-7)
    assert stored["c_wscale"][2] == 1.0 and not np.any(stored["c_w8"][:, 2])  # the all-zero channel


def test_the_identity_ignores_names_and_metadata_and_follows_values_and_wiring() -> None:
    base = _two_heads()
    identity = model_identity(base)
    renamed = _two_heads()
    for node in renamed.graph.node:
        node.name = f"renamed_{node.name}"
        node.doc_string = "exported by another tool"
    renamed.producer_name, renamed.producer_version = "another onnx", "9.9"
    renamed.metadata_props.add(key="built_by", value="someone else")
    renamed.graph.initializer.reverse()
    assert model_identity(renamed) == identity
    changed = _two_heads()
    changed.graph.initializer[0].raw_data = (
        numpy_helper.to_array(changed.graph.initializer[0]) * 1.0001
    ).tobytes()
    assert model_identity(changed) != identity
    rewired = _two_heads()
    rewired.graph.node[3].input[:] = ["c", "b"]
    assert model_identity(rewired) != identity
    assert model_identity(_two_heads(seed=2)) != identity


@pytest.mark.parametrize("stored_as", ["raw_data", "float_data"])
def test_the_identity_does_not_depend_on_how_a_tensor_is_stored(stored_as: str) -> None:
    model = _two_heads()
    tensor = model.graph.initializer[0]
    values = numpy_helper.to_array(tensor)
    if stored_as == "float_data":
        tensor.ClearField("raw_data")
        tensor.float_data.extend(values.ravel().tolist())
    assert model_identity(model) == model_identity(_two_heads())


def test_two_builds_of_the_variant_have_the_pinned_identity_and_the_same_bytes(
    upstream: Path, int8_variant: tuple[bytes, str]
) -> None:
    first_bytes, first = int8_variant
    model = load_model(upstream)
    second = make_int8(model)
    assert first == second == VARIANT_IDENTITY == model_identity(onnx.load_from_string(first_bytes))
    assert model.SerializeToString() == first_bytes
