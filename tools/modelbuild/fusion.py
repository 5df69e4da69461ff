"""Fewer, larger operators for a transformer encoder's graph: each self-attention block and each
erf GELU becomes one onnxruntime operator (``com.microsoft`` MultiHeadAttention and Gelu).

The exported graphs spell attention out in about thirty small operators per layer (reshapes,
transposes, shape arithmetic, two MatMuls, the mask, the softmax) and GELU in five, which
onnxruntime does not fuse once the projections are quantised. For one memory-sized text a run is
then mostly operator overhead; fused, it does the same arithmetic in fewer steps. ``fuse_encoder``
rewrites only what matches exactly; ``outputs_agree`` is the check a caller makes before using the
result (``sessions.load_session`` does, and keeps the graph as it was otherwise).

Attention is matched from its Softmax: ``Softmax(Q·Kᵀ·scale + mask)·V`` where Q, K and V are
``Transpose(0,2,1,3)(Reshape(x, [batch, length, heads, size]))`` of three (batch, length, hidden)
tensors and the result goes back through ``Transpose(0,2,1,3)`` and a Reshape. The scale may be a
constant multiplying Q and K (torch's dynamo export) or dividing the scores (the older export). The
mask becomes the graph input ``attention_mask`` as a key padding mask: for a text's own tokens this
is what the exported mask computes (padded rows of a batch may differ; they are not pooled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from onnx import GraphProto, ModelProto, NodeProto

#: The graph input whose ones mark a text's tokens.
MASK_INPUT = "attention_mask"
_MASK_INT32 = "remem_fused_key_padding_mask"
_MS_DOMAIN = "com.microsoft"
_HEADS_FIRST = [0, 2, 1, 3]


@dataclass(frozen=True)
class _Attention:
    """One matched attention block: the three projections, the heads, the scale, what it replaces."""

    query: str
    key: str
    value: str
    heads: int
    scale: float
    output: NodeProto


class _Graph:
    """Lookups over a graph: who makes a value, who reads it, which values are constants."""

    def __init__(self, graph: GraphProto) -> None:
        from onnx import numpy_helper  # noqa: PLC0415

        self.producer: dict[str, NodeProto] = {name: node for node in graph.node for name in node.output}
        self.readers: dict[str, list[NodeProto]] = {}
        for node in graph.node:
            for name in node.input:
                self.readers.setdefault(name, []).append(node)
        self.consts: dict[str, np.ndarray[Any, Any]] = {
            t.name: numpy_helper.to_array(t) for t in graph.initializer
        }
        for node in graph.node:
            if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
                self.consts[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)

    def made_by(self, name: str, op_type: str, perm: list[int] | None = None) -> NodeProto | None:
        """The node of type ``op_type`` (with that ``perm``, for a Transpose) that makes ``name``."""
        node = self.producer.get(name)
        if node is None or node.op_type != op_type:
            return None
        if perm is not None and _ints(node, "perm") != perm:
            return None
        return node

    def scalar(self, name: str) -> float | None:
        """The value of a one-element constant, else None."""
        value = self.consts.get(name)
        return float(value.reshape(-1)[0]) if value is not None and value.size == 1 else None

    def only_reader(self, name: str, op_type: str) -> NodeProto | None:
        """The one node reading ``name`` if it is of type ``op_type``, else None."""
        readers = self.readers.get(name, [])
        return readers[0] if len(readers) == 1 and readers[0].op_type == op_type else None


def fuse_encoder(model: ModelProto) -> int:
    """Replace every attention block and erf GELU of ``model`` that matches exactly by one operator;
    returns how many were replaced (0: the model is unchanged). Arithmetic is kept: the same scale,
    the same exact (erf) GELU."""
    from onnx import helper  # noqa: PLC0415

    graph = model.graph
    view = _Graph(graph)
    has_mask = any(graph_input.name == MASK_INPUT for graph_input in graph.input)
    replaced: dict[str, NodeProto] = {}  # by the first output's name (a graph names each value once)
    for node in graph.node:
        if node.op_type == "Softmax" and has_mask and (found := _attention(view, node)) is not None:
            replaced[found.output.output[0]] = helper.make_node(
                "MultiHeadAttention",
                [found.query, found.key, found.value, "", _MASK_INT32],
                list(found.output.output),
                domain=_MS_DOMAIN,
                num_heads=found.heads,
                scale=found.scale,
            )
        elif node.op_type == "Erf" and (gelu := _gelu(view, node)) is not None:
            x, last = gelu
            replaced[last.output[0]] = helper.make_node("Gelu", [x], list(last.output), domain=_MS_DOMAIN)
    if not replaced:
        return 0
    nodes = [replaced.get(node.output[0], node) if node.output else node for node in graph.node]
    if any(node.op_type == "MultiHeadAttention" for node in replaced.values()):
        nodes.insert(0, helper.make_node("Cast", [MASK_INPUT], [_MASK_INT32], to=6))  # int32
    del graph.node[:]
    graph.node.extend(_live(nodes, {output.name for output in graph.output}))
    used = {name for node in graph.node for name in node.input}
    kept = [tensor for tensor in graph.initializer if tensor.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(opset.domain == _MS_DOMAIN for opset in model.opset_import):
        model.opset_import.append(helper.make_opsetid(_MS_DOMAIN, 1))
    return len(replaced)


def _attention(view: _Graph, softmax: NodeProto) -> _Attention | None:
    """The attention block around ``softmax``, if it has exactly the expected shape."""
    if _ints(softmax, "axis", -1) not in (-1, 3):
        return None
    scores, divisor = softmax.input[0], 1.0
    if (masked := view.made_by(scores, "Add")) is not None:
        scores = next(
            (
                name
                for name in masked.input
                if name in view.producer and view.producer[name].op_type in ("MatMul", "Div")
            ),
            "",
        )
    if (divided := view.made_by(scores, "Div")) is not None and view.scalar(divided.input[1]):
        scores, divisor = divided.input[0], view.scalar(divided.input[1]) or 1.0
    product = view.made_by(scores, "MatMul")
    weighted = view.only_reader(softmax.output[0], "MatMul")
    if product is None or weighted is None or weighted.input[0] != softmax.output[0]:
        return None
    query, query_scale = _scaled(view, product.input[0])
    key, key_scale = _scaled(view, product.input[1])
    query_heads = _split_heads(view, query)
    key_heads = _split_keys(view, key)
    value_heads = _split_heads(view, weighted.input[1])
    output = _merged_heads(view, weighted.output[0])
    if query_heads is None or key_heads is None or value_heads is None or output is None:
        return None
    heads = {query_heads[1], key_heads[1], value_heads[1]}
    if len(heads) != 1 or 0 in heads:
        return None
    scale = query_scale * key_scale / divisor
    return _Attention(query_heads[0], key_heads[0], value_heads[0], heads.pop(), scale, output)


def _scaled(view: _Graph, name: str) -> tuple[str, float]:
    """``name`` without a constant scalar Mul in front of it, and that scalar (1 if none)."""
    node = view.made_by(name, "Mul")
    if node is not None:
        for position in (0, 1):
            factor = view.scalar(node.input[1 - position])
            if factor is not None:
                return node.input[position], factor
    return name, 1.0


def _split_heads(view: _Graph, name: str) -> tuple[str, int] | None:
    """For ``Transpose(0,2,1,3)(Reshape(x, [b, n, heads, size]))``: (x, heads)."""
    transpose = view.made_by(name, "Transpose", _HEADS_FIRST)
    reshape = None if transpose is None else view.made_by(transpose.input[0], "Reshape")
    if reshape is None:
        return None
    heads = _heads(view, reshape)
    return None if heads is None else (reshape.input[0], heads)


def _split_keys(view: _Graph, name: str) -> tuple[str, int] | None:
    """The keys, transposed for the product: ``Transpose(0,2,3,1)(Reshape(x, …))`` (older exports)
    or ``Reshape(Transpose(0,2,1)(Reshape(heads-first keys)))`` (dynamo); (x, heads)."""
    transposed = view.made_by(name, "Transpose", [0, 2, 3, 1])
    if transposed is not None:
        reshape = view.made_by(transposed.input[0], "Reshape")
        heads = None if reshape is None else _heads(view, reshape)
        return None if reshape is None or heads is None else (reshape.input[0], heads)
    outer = view.made_by(name, "Reshape")
    swap = None if outer is None else view.made_by(outer.input[0], "Transpose", [0, 2, 1])
    inner = None if swap is None else view.made_by(swap.input[0], "Reshape")
    return None if inner is None else _split_heads(view, inner.input[0])


def _merged_heads(view: _Graph, name: str) -> NodeProto | None:
    """The Reshape that ends ``Reshape(Transpose(0,2,1,3)(name))``, the block's output."""
    transpose = view.only_reader(name, "Transpose")
    if transpose is None or _ints(transpose, "perm") != _HEADS_FIRST:
        return None
    return view.only_reader(transpose.output[0], "Reshape")


def _heads(view: _Graph, reshape: NodeProto) -> int | None:
    """How many heads ``reshape`` splits its input into: the third entry of its 4-entry target (a
    constant or a Concat of pieces), or when that is -1, the width of the input's bias / the fourth."""
    value = view.consts.get(reshape.input[1])
    concat = view.made_by(reshape.input[1], "Concat")
    if value is not None and value.size == 4:
        heads, size = float(value[2]), float(value[3])
    elif concat is not None and len(concat.input) == 4:
        heads, size = view.scalar(concat.input[2]) or 0.0, view.scalar(concat.input[3]) or 0.0
    else:
        return None
    if heads == -1 and size > 0:
        heads = _width(view, reshape.input[0]) / size
    return int(heads) if heads == int(heads) and heads > 0 else None


def _width(view: _Graph, name: str) -> int:
    """The hidden width of ``name`` when it is made by adding a 1-D constant (a bias: an Add's, or
    a MatMulIntegerToFloat's seventh input), else 0."""
    add = view.made_by(name, "Add")
    fused = view.made_by(name, "MatMulIntegerToFloat")
    inputs = list(add.input) if add is not None else list(fused.input[6:7]) if fused is not None else []
    biases = [view.consts[n] for n in inputs if n in view.consts]
    return biases[0].size if len(biases) == 1 and biases[0].ndim == 1 else 0


def _gelu(view: _Graph, erf: NodeProto) -> tuple[str, NodeProto] | None:
    """For ``x · 0.5 · (1 + erf(x / √2))`` (its two Muls in either order): (x, the last Mul)."""
    divide = view.made_by(erf.input[0], "Div")
    plus_one = view.only_reader(erf.output[0], "Add")
    if divide is None or plus_one is None or not _near(view.scalar(divide.input[1]), math.sqrt(2)):
        return None
    if not _near(view.scalar(_other(plus_one, erf.output[0])), 1.0):
        return None
    first = view.only_reader(plus_one.output[0], "Mul")
    second = None if first is None else view.only_reader(first.output[0], "Mul")
    if first is None or second is None:
        return None
    x = divide.input[0]
    factors = {_other(first, plus_one.output[0]), _other(second, first.output[0])}
    halves = [name for name in factors if name != x and _near(view.scalar(name), 0.5)]
    return (x, second) if x in factors and len(halves) == 1 else None


def _other(node: NodeProto, name: str) -> str:
    """The input of a two-input node that is not ``name``."""
    return str(node.input[1] if node.input[0] == name else node.input[0])


def _near(value: float | None, expected: float) -> bool:
    return value is not None and abs(value - expected) <= 1e-5 * abs(expected)


def _ints(node: NodeProto, name: str, default: Any = None) -> Any:
    for attribute in node.attribute:
        if attribute.name == name:
            return list(attribute.ints) if attribute.ints else int(attribute.i)
    return default


def _live(nodes: list[NodeProto], outputs: set[str]) -> list[NodeProto]:
    """``nodes`` (in order) without those whose results nothing uses any more."""
    needed = set(outputs)
    kept = []
    for node in reversed(nodes):
        if any(name in needed for name in node.output):
            kept.append(node)
            needed.update(node.input)
    return kept[::-1]


#: The cosine a fused graph's probe vectors must reach. Fused and unfused graphs of the int8 variant
#: differ where an activation rounds to the other int8 step (mean cosine 0.99997 on 300 memories,
#: lowest 0.997); a fusion that drops part of the arithmetic (a bias, the mask, a scale) lands lower.
MIN_PROBE_COSINE = 0.999


def outputs_agree(reference: Any, candidate: Any, *, minimum: float = MIN_PROBE_COSINE) -> bool:
    """Whether two onnxruntime sessions of an encoder give the same mean-pooled vectors (cosine ≥
    ``minimum``) for probe texts of a few lengths, one text per run (fed as the runner feeds them)."""
    from remem.embedders.pooling import pool  # noqa: PLC0415
    from remem.embedders.runner import encoder_feeds  # noqa: PLC0415
    from remem.embedders.spec import Pooling  # noqa: PLC0415

    for length in (3, 17, 64):
        ids = [1000 + (position * 7919) % 1000 for position in range(length)]
        feeds, mask = encoder_feeds(reference, [ids], "the probed model")
        first, second = (pool(Pooling.MEAN, s.run(None, feeds)[0], mask)[0] for s in (reference, candidate))
        if float(first @ second) < minimum:
            return False
    return True
