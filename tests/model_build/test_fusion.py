"""remem's graph fusions (modelbuild/fusion.py): attention blocks and GELUs become one onnxruntime
operator each, the arithmetic kept; a fusion whose vectors differ is found out."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from modelbuild.build import session
from modelbuild.fusion import fuse_encoder, outputs_agree

HIDDEN, HEADS, VOCAB = 8, 2, 2100


def _encoder(*, position_bias: bool = False) -> onnx.ModelProto:
    """One attention layer as older torch exports write it (keys transposed 0,2,3,1, scores divided
    by √size, an additive mask from ``attention_mask``), then an erf GELU; ``position_bias`` adds a
    term that differs from key to key to the scores instead of the mask (a fusion must then be
    refused)."""
    rng = np.random.default_rng(3)
    size = HIDDEN // HEADS
    consts = {
        "table": rng.normal(size=(VOCAB, HIDDEN)),
        **{f"w{p}": rng.normal(size=(HIDDEN, HIDDEN)) / 3 for p in "qkv"},
        **{f"b{p}": rng.normal(size=(HIDDEN,)) for p in "qkv"},
        "split": np.array([0, 0, HEADS, size], dtype=np.int64),
        "merge": np.array([0, 0, HIDDEN], dtype=np.int64),
        "root": np.array(math.sqrt(size)),
        "one": np.array(1.0),
        "low": np.array(-10000.0),
        "hundredth": np.array(0.01),
        "sqrt2": np.array(math.sqrt(2)),
        "half": np.array(0.5),
        "axes": np.array([1, 2], dtype=np.int64),
    }
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["x"])]
    for p in "qkv":
        nodes += [
            helper.make_node("MatMul", ["x", f"w{p}"], [f"{p}_mm"]),
            helper.make_node("Add", [f"{p}_mm", f"b{p}"], [p]),
            helper.make_node("Reshape", [p, "split"], [f"{p}_4"]),
        ]
    nodes += [
        helper.make_node("Transpose", ["q_4"], ["q_h"], perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k_4"], ["k_t"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v_4"], ["v_h"], perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["q_h", "k_t"], ["raw"]),
        helper.make_node("Div", ["raw", "root"], ["scores"]),
        helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["one", "m"], ["inv"]),
        helper.make_node("Mul", ["inv", "low"], ["neg"]),
        helper.make_node("Cast", ["input_ids"], ["id_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["id_f", "hundredth"], ["by_id"]),  # differs from key to key
        helper.make_node("Unsqueeze", ["by_id" if position_bias else "neg", "axes"], ["mask"]),
        helper.make_node("Add", ["scores", "mask"], ["masked"]),
        helper.make_node("Softmax", ["masked"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v_h"], ["ctx"]),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "merge"], ["att"]),
        helper.make_node("Div", ["att", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["att", "e1"], ["xe"]),
        helper.make_node("Mul", ["xe", "half"], ["last_hidden_state"]),
    ]
    graph = helper.make_graph(
        nodes,
        "encoder",
        [
            helper.make_tensor_value_info(name, TensorProto.INT64, ["b", "n"])
            for name in ("input_ids", "attention_mask")
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "n", HIDDEN])],
        [
            numpy_helper.from_array(v.astype(np.int64 if v.dtype == np.int64 else np.float32), k)
            for k, v in consts.items()
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _ops(model: onnx.ModelProto) -> Counter[str]:
    return Counter(node.op_type for node in model.graph.node)


def test_an_older_export_fuses_to_one_attention_and_one_gelu_that_compute_the_same() -> None:
    model = _encoder()
    reference = _session(model)
    assert fuse_encoder(model) == 2
    ops = _ops(model)
    assert ops["MultiHeadAttention"] == 1 and ops["Gelu"] == 1
    assert not {"Softmax", "Transpose", "Erf", "Div", "Unsqueeze", "Sub"} & set(ops)
    fused = _session(model)
    ids = np.array([[1000 + i * 37 % 1000 for i in range(9)]] * 2, dtype=np.int64)
    mask = np.ones_like(ids)
    mask[1, 5:] = 0  # a padded text: its own tokens must come out the same
    feeds = {"input_ids": ids, "attention_mask": mask}
    expected, got = (session.run(None, feeds)[0] for session in (reference, fused))
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[1, :5], expected[1, :5], rtol=1e-4, atol=1e-5)
    assert outputs_agree(reference, fused)


def test_a_fusion_that_drops_part_of_the_arithmetic_is_found_out() -> None:
    model = _encoder(position_bias=True)  # the scores get a bias, not the mask
    reference = _session(model)
    assert fuse_encoder(model) == 2  # the shape matches…
    assert not outputs_agree(reference, _session(model))  # …the vectors do not


def test_a_graph_without_the_patterns_is_left_as_it_is() -> None:
    model = _encoder()
    for node in model.graph.node:  # a tanh GELU approximation and a softmax over another axis
        if node.op_type == "Erf":
            node.op_type = "Tanh"
        if node.op_type == "Softmax":
            node.attribute[0].i = 1
    before = model.SerializeToString()
    assert fuse_encoder(model) == 0
    assert model.SerializeToString() == before


def test_the_int8_variant_fuses_six_attentions_and_six_gelus_that_compute_the_same(
    int8_variant: tuple[bytes, str],
) -> None:
    data, _ = int8_variant
    model = onnx.load_from_string(data)
    assert fuse_encoder(model) == 12  # six layers: attention and GELU each
    ops = _ops(model)
    assert ops["MultiHeadAttention"] == 6 and ops["Gelu"] == 6 and not {"Softmax", "Erf"} & set(ops)
    onnx.checker.check_model(model)
    fused = session(model.SerializeToString())
    assert outputs_agree(session(data), fused, minimum=0.9999)  # tighter than the gate (0.999)
