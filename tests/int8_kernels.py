"""onnxruntime's two kinds of x86 int8 matrix kernels, written out as plain ONNX, to run either on any CPU.

A ``MatMulIntegerToFloat`` (uint8 activations A with a zero point, int8 weights B, float scales and a
bias) sums ``A[k] · B[k, n]`` over k. With AVX-512 VNNI or AVX-VNNI (VPDPBUSD) onnxruntime adds every
product into an int32: the exact sum. With AVX2 (and AVX-512BW without VNNI) it adds each pair of
products, k = 2i and 2i + 1, into a *saturating* int16 first (VPMADDUBSW), then the pairs into an
int32. Both then subtract the zero point's share (``a_zero · Σ_k B[k, n]``), multiply by
``a_scale · b_scale[n]`` and add the bias.

``with_kernels(model, saturating)`` replaces each such node by that arithmetic in standard
operators (products in float32, exact below 2^24; sums in int32), so this machine can compute what
an AVX2 machine computes (``saturating=True``) or what a VNNI machine computes (``False``), the float
parts of the graph (layer norms, attention, GELU) being the same in both runs.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

INT16 = (-32768.0, 32767.0)


def with_kernels(model: onnx.ModelProto, *, saturating: bool) -> bytes:
    """``model`` (not changed) with every ``MatMulIntegerToFloat`` computed by the AVX2 kernel's
    arithmetic (``saturating``) or VNNI's, serialised."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    nodes: list[onnx.NodeProto] = []
    for node in model.graph.node:
        if node.op_type == "MatMulIntegerToFloat":
            nodes += _written_out(model.graph, node, weights[node.input[1]], saturating)
        else:
            nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model.SerializeToString()


def pair_sums(activations: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Every pair sum ``A[.., 2i] · B[2i, n] + A[.., 2i+1] · B[2i+1, n]`` an AVX2 kernel forms, as
    int32 (shape ``(rows, K/2, N)``) — the values that must stay within int16."""
    rows = activations.reshape(-1, activations.shape[-1]).astype(np.int32)
    b = weights.astype(np.int32)
    sums: np.ndarray = rows[:, 0::2, None] * b[None, 0::2, :] + rows[:, 1::2, None] * b[None, 1::2, :]
    return sums


def _written_out(
    graph: onnx.GraphProto, node: onnx.NodeProto, weight: np.ndarray, saturating: bool
) -> list[onnx.NodeProto]:
    a, _, a_scale, b_scale, a_zero, _, bias = node.input
    own = f"kernel_{node.output[0]}"  # every new name starts so: no clash with the graph's own
    constants = {
        "even": weight[0::2].astype(np.float32),
        "odd": weight[1::2].astype(np.float32),
        "column_sums": weight.astype(np.int32).sum(axis=0, dtype=np.int32),
        "pairs": np.array([0, 0, weight.shape[0] // 2, 2], np.int64),
        "k": np.array([-2], np.int64),
        "low": np.array(INT16[0], np.float32),
        "high": np.array(INT16[1], np.float32),
    }
    graph.initializer.extend(
        numpy_helper.from_array(value, f"{own}_{key}") for key, value in constants.items()
    )
    c = {key: f"{own}_{key}" for key in constants}
    step = _Steps(own)
    pairs = step("Reshape", step("Cast", a, to=onnx.TensorProto.FLOAT), c["pairs"])
    first, second = step.split(pairs)
    summed = step("Add", step("Mul", first, c["even"]), step("Mul", second, c["odd"]))  # (b, s, K/2, N)
    if saturating:
        summed = step("Clip", summed, c["low"], c["high"])
    total = step("ReduceSum", step("Cast", summed, to=onnx.TensorProto.INT32), c["k"], keepdims=0)
    zero_share = step("Mul", step("Cast", a_zero, to=onnx.TensorProto.INT32), c["column_sums"])
    exact = step("Cast", step("Sub", total, zero_share), to=onnx.TensorProto.FLOAT)
    scaled = step("Mul", exact, step("Mul", a_scale, b_scale))
    step.nodes.append(helper.make_node("Add", [scaled, bias], [node.output[0]]))
    return step.nodes


class _Steps:
    """Makes the nodes of one written-out MatMul, each output named after it."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.nodes: list[onnx.NodeProto] = []

    def __call__(self, op_type: str, *inputs: str, **attributes: int) -> str:
        name = f"{self.prefix}_step{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [name], **attributes))
        return name

    def split(self, pairs: str) -> tuple[str, str]:
        """The first and second members of each pair, as (b, s, K/2, 1)."""
        names = (f"{self.prefix}_first", f"{self.prefix}_second")
        self.nodes.append(helper.make_node("Split", [pairs], list(names), axis=-1))
        return names[0], names[1]
