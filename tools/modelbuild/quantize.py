"""remem's own int8 quantisation of an encoder's MatMuls, and the identity of the model it makes.

``quantize_matmuls`` rewrites every MatMul whose weight is a float32 constant into onnxruntime's
dynamic-quantisation pattern — the activation quantised at run time (``DynamicQuantizeLinear``, one
per activation, shared by the MatMuls that read it), the weight stored as symmetric int8 with one scale
per output channel, ``MatMulInteger``, then a float rescale — which onnxruntime fuses into its integer
kernels. It is done here, in numpy, rather than by ``onnxruntime.quantization``, so that the weights a
variant holds depend only on the source file and this code, never on the installed onnxruntime.

``model_identity`` is a sha256 of what a model computes: its operators, their attributes and wiring,
and every constant's values; not its file bytes, which also carry the onnx version that wrote them,
node names and metadata. Two variants built from the same file by this code on two machines have the
same identity, which is what a store records as its model stamp.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from onnx import AttributeProto, GraphProto, ModelProto, NodeProto

#: Version of the recipe, part of every identity: a change to how weights are quantised or the graph
#: is rewritten must change it.
RECIPE = "remem-int8-per-channel-1"

#: The largest weight value of the 8-bit recipe (symmetric: -127…127, zero point 0).
INT8_LIMIT = 127
#: The largest weight value of the 7-bit recipe (-63…63): a pair of uint8 × int8 products sums to at
#: most 2 · 255 · 63 = 32,130, inside int16, so the integer kernels that add pairs into a saturating
#: int16 (AVX2's VPMADDUBSW, onnxruntime's ``reduce_range``) compute exactly what VNNI computes.
INT7_LIMIT = 63


def quantize_matmuls(graph: GraphProto, limit: int = INT8_LIMIT) -> int:
    """Quantise in place every MatMul of ``graph`` whose second input is a 2-D float32 initializer,
    its weights to -``limit``…``limit``; the number of MatMuls rewritten."""
    from onnx import numpy_helper  # noqa: PLC0415

    weights = {t.name: t for t in graph.initializer if t.data_type == 1 and len(t.dims) == 2}
    activations: dict[str, tuple[str, str, str]] = {}
    nodes: list[NodeProto] = []
    replaced: set[str] = set()
    for node in graph.node:
        if node.op_type != "MatMul" or node.domain or node.input[1] not in weights:
            nodes.append(node)
            continue
        source = node.input[0]
        if source not in activations:
            activations[source] = (f"{source}_q8", f"{source}_q8_scale", f"{source}_q8_zero")
            nodes.append(_node("DynamicQuantizeLinear", [source], list(activations[source])))
        weight = numpy_helper.to_array(weights[node.input[1]])
        nodes += _integer_matmul(graph, node, weight, activations[source], limit)
        replaced.add(node.input[1])
    del graph.node[:]
    graph.node.extend(nodes)
    still_used = {name for node in nodes for name in node.input}
    for name in replaced - still_used:
        graph.initializer.remove(weights[name])
    return sum(1 for node in nodes if node.op_type == "MatMulInteger")


def _integer_matmul(
    graph: GraphProto,
    node: NodeProto,
    weight: npt.NDArray[Any],
    activation: tuple[str, str, str],
    limit: int,
) -> list[NodeProto]:
    """The nodes that compute ``node`` (``x @ weight``) with ``x`` quantised as ``activation``."""
    from onnx import numpy_helper  # noqa: PLC0415

    quantized, scales = _per_channel_int8(weight.astype(np.float32), limit)
    output = node.output[0]
    names = {part: f"{output}_{part}" for part in ("w8", "wzero", "wscale", "scale", "i32", "f32")}
    graph.initializer.extend(
        [
            numpy_helper.from_array(quantized, names["w8"]),
            numpy_helper.from_array(np.zeros(scales.shape, np.int8), names["wzero"]),
            numpy_helper.from_array(scales, names["wscale"]),
        ]
    )
    x8, x_scale, x_zero = activation
    return [
        _node("Mul", [x_scale, names["wscale"]], [names["scale"]]),
        _node("MatMulInteger", [x8, names["w8"], x_zero, names["wzero"]], [names["i32"]]),
        _node("Cast", [names["i32"]], [names["f32"]], to=1),
        _node("Mul", [names["f32"], names["scale"]], [output]),
    ]


def _per_channel_int8(
    weight: npt.NDArray[np.float32], limit: int
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """``weight`` (in, out) as int8 values in -``limit``…``limit`` and one float32 scale per output
    column, symmetric."""
    peak = np.abs(weight).max(axis=0)
    scales = np.where(peak > 0, peak / np.float32(limit), np.float32(1.0)).astype(np.float32)
    quantized = np.clip(np.rint(weight / scales), -limit, limit).astype(np.int8)
    return quantized, scales


def _node(op_type: str, inputs: list[str], outputs: list[str], **attributes: int) -> NodeProto:
    from onnx import helper  # noqa: PLC0415

    node: NodeProto = helper.make_node(op_type, inputs, outputs, outputs[0])
    node.attribute.extend(helper.make_attribute(key, value) for key, value in attributes.items())
    return node


def model_identity(model: ModelProto) -> str:
    """The sha256 (hex) of what ``model`` computes under ``RECIPE``: operator sets, graph inputs and
    outputs, every node's operator, attributes and wiring in order, every initializer's name, type,
    shape and values. Node names, doc strings, producer and metadata do not count."""
    digest = hashlib.sha256(RECIPE.encode())
    for opset in sorted((o.domain, o.version) for o in model.opset_import):
        _feed(digest, "opset", *opset)
    graph = model.graph
    for value in (*graph.input, *graph.output):
        _feed(digest, "io", value.name, value.type.tensor_type.elem_type)
    for node in graph.node:
        _feed(digest, "node", node.domain, node.op_type, *node.input, "->", *node.output)
        for attribute in sorted(node.attribute, key=lambda a: a.name):
            _feed(digest, "attr", attribute.name, _attribute_bytes(attribute))
    for tensor in sorted(graph.initializer, key=lambda t: t.name):
        _feed(digest, "init", tensor.name, tensor.data_type, *tensor.dims, _tensor_bytes(tensor))
    return digest.hexdigest()


def _feed(digest: Any, *parts: object) -> None:
    """Add ``parts`` to ``digest`` unambiguously (each length-prefixed)."""
    for part in parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        digest.update(len(data).to_bytes(8, "little") + data)


def _attribute_bytes(attribute: AttributeProto) -> bytes:
    from onnx import AttributeProto, helper  # noqa: PLC0415

    if attribute.type == AttributeProto.TENSOR:
        return _tensor_bytes(attribute.t)
    if attribute.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS):
        return bytes(attribute.SerializeToString(deterministic=True))  # encoders have no subgraphs
    return repr(helper.get_attribute_value(attribute)).encode()


def _tensor_bytes(tensor: Any) -> bytes:
    """A tensor's values, little-endian, however the file stored them (raw bytes or typed fields)."""
    from onnx import numpy_helper  # noqa: PLC0415

    values = numpy_helper.to_array(tensor)
    return bytes(np.ascontiguousarray(values).astype(values.dtype.newbyteorder("<")).tobytes())
