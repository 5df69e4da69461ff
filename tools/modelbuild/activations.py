"""Fixed activation scales for an int8 variant: the same vector for a text in any batch.

The int8 variant quantises each MatMul's input with one scale per run (onnxruntime's
DynamicQuantizeLinear): a text's vector then depends on the texts run beside it, so the variant runs
one text at a time. ``calibrate`` gives every such input a fixed scale instead (QuantizeLinear with
a range measured once on a few hundred texts, ``calibrate.py``): each row is quantised alone,
texts of one length can run together, and the arithmetic per text is the same. The ranges ship with
remem for the models it knows, keyed by the variant's own identity, so a calibrated file is the same
wherever it is built (a range computed on each machine would differ in its last bits).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from onnx import ModelProto, NodeProto

#: A quantised activation's name in the variant's graph and the range (low, high) it is mapped onto.
Ranges = tuple[tuple[str, float, float], ...]

#: Measured by ``calibrate.py`` (1st / 99th percentile of each text's lowest / highest value on
#: 300 memory-sized notes, 300 LoCoMo turns and 50 SciFact documents), keyed by the identity of the
#: variant they were measured on (``quantize.model_identity``).
KNOWN_RANGES: dict[str, Ranges] = {
    # all-minilm-l6-v2 (bundled): held out, mean cosine to the original 0.9934 on memory-sized notes,
    # 0.9925 on LoCoMo turns, 0.9955 on SciFact (per-run scales: 0.9938, 0.9932, 0.9958).
    "06e5a7930478046b558fd004ad95f9e0f373f6fefe34bcd8dae7d70ae7797294": (
        ("layer_norm", -2.7785, 6.3281),
        ("view_3", -3.2616, 2.2203),
        ("layer_norm_1", -6.641, 28.4651),
        ("gelu", -0.17, 25.0136),
        ("layer_norm_2", -4.4487, 8.1316),
        ("view_7", -2.7252, 2.8492),
        ("layer_norm_3", -7.9171, 30.3282),
        ("gelu_1", -0.17, 20.4485),
        ("layer_norm_4", -5.2101, 7.9936),
        ("view_11", -2.5643, 2.6875),
        ("layer_norm_5", -13.8684, 27.6879),
        ("gelu_2", -0.17, 17.5923),
        ("layer_norm_6", -4.8951, 9.6609),
        ("view_15", -2.2835, 2.8222),
        ("layer_norm_7", -14.9021, 28.7956),
        ("gelu_3", -0.17, 13.8112),
        ("layer_norm_8", -5.7042, 10.519),
        ("view_19", -2.9752, 2.8835),
        ("layer_norm_9", -13.9726, 21.6121),
        ("gelu_4", -0.17, 6.781),
        ("layer_norm_10", -5.4147, 9.8963),
        ("view_23", -2.9205, 3.0765),
        ("layer_norm_11", -12.0824, 13.0532),
        ("gelu_5", -0.17, 6.9444),
    ),
}


def ranges_for(variant_identity: str) -> Ranges | None:
    """The shipped activation ranges of a variant, or None when remem has none for it."""
    return KNOWN_RANGES.get(variant_identity)


def calibrate(model: ModelProto, ranges: Ranges) -> ModelProto:
    """``model`` (an int8 variant) with every DynamicQuantizeLinear replaced by a QuantizeLinear of
    the given range, and each quantised MatMul chain (MatMulInteger, Cast, Mul by the scales, Add of
    the bias) as one onnxruntime MatMulIntegerToFloat; ValueError when an activation has no range or
    a chain has another shape. The model is changed in place and returned."""
    from onnx import numpy_helper  # noqa: PLC0415 - lazy: only building a variant needs onnx

    known = {name: (low, high) for name, low, high in ranges}
    nodes: list[NodeProto] = []
    for node in model.graph.node:
        if node.op_type != "DynamicQuantizeLinear":
            nodes.append(node)
            continue
        if node.input[0] not in known:
            raise ValueError(f"no range for the activation {node.input[0]}")
        scale, zero = _scale_and_zero(*known[node.input[0]])
        model.graph.initializer.extend(
            [numpy_helper.from_array(scale, node.output[1]), numpy_helper.from_array(zero, node.output[2])]
        )
        nodes.append(
            _node("QuantizeLinear", [node.input[0], node.output[1], node.output[2]], [node.output[0]])
        )
    del model.graph.node[:]
    model.graph.node.extend(_fused_matmuls(nodes))
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        from onnx import helper  # noqa: PLC0415

        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model


def _scale_and_zero(low: float, high: float) -> tuple[Any, Any]:
    """The uint8 scale and zero point mapping [low, high] (widened to hold 0) onto 0..255, as
    DynamicQuantizeLinear computes them for a run whose values span that range."""
    import numpy as np  # noqa: PLC0415

    low, high = min(low, 0.0), max(high, 0.0)
    scale = np.float32((high - low) / 255.0) if high > low else np.float32(1.0)
    zero = np.uint8(np.clip(np.round(-low / scale), 0, 255))
    return np.array(scale, dtype=np.float32), np.array(zero, dtype=np.uint8)


def _fused_matmuls(nodes: list[NodeProto]) -> list[NodeProto]:
    """The nodes with each MatMulInteger → Cast → Mul(scales) → Add(bias) chain as one
    MatMulIntegerToFloat (onnxruntime fuses it only after a DynamicQuantizeLinear)."""
    producer = {output: node for node in nodes for output in node.output}
    users: dict[str, list[NodeProto]] = {}
    for node in nodes:
        for name in node.input:
            users.setdefault(name, []).append(node)
    fused: dict[int, NodeProto] = {}
    gone: set[int] = set()
    for node in nodes:
        if node.op_type != "MatMulInteger":
            continue
        quantized, weights, zero, weight_zero = node.input
        cast, mul, add = _chain(node, users)
        scales = producer.get(_other(mul, cast.output[0]))
        activation_scale = producer[quantized].input[1] if quantized in producer else ""
        if scales is None or scales.op_type != "Mul" or activation_scale not in scales.input:
            raise ValueError(f"the scales of {node.output[0]} are not the activation's times the weights'")
        inputs = [quantized, weights, activation_scale, _other(scales, activation_scale), zero, weight_zero]
        inputs.append(_other(add, mul.output[0]))  # the bias
        fused[id(node)] = _node("MatMulIntegerToFloat", inputs, [add.output[0]], domain="com.microsoft")
        gone.update({id(cast), id(mul), id(add)})
        if len(users[scales.output[0]]) == 1:
            gone.add(id(scales))
    return [fused.get(id(node), node) for node in nodes if id(node) not in gone]


def _chain(matmul: NodeProto, users: dict[str, list[NodeProto]]) -> tuple[NodeProto, NodeProto, NodeProto]:
    """The Cast, Mul and Add that follow a MatMulInteger, each its only user; ValueError otherwise."""
    found = []
    name = matmul.output[0]
    for op_type in ("Cast", "Mul", "Add"):
        following = users.get(name, [])
        if len(following) != 1 or following[0].op_type != op_type:
            raise ValueError(f"{matmul.output[0]} is not followed by Cast, Mul and Add")
        found.append(following[0])
        name = following[0].output[0]
    return found[0], found[1], found[2]


def _other(node: NodeProto, name: str) -> str:
    """The input of a two-input node that is not ``name``."""
    first, second = (str(value) for value in node.input)
    return second if first == name else first


def _node(op_type: str, inputs: list[str], outputs: list[str], domain: str = "") -> NodeProto:
    from onnx import helper  # noqa: PLC0415

    return helper.make_node(op_type, inputs, outputs, name=f"remem_{op_type}_{outputs[0]}", domain=domain)
