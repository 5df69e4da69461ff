"""Just enough of the ONNX protobuf format to write an inference graph, byte for byte the same on
every machine (no ``onnx`` package: its serialiser may change between versions, and a converted
model is pinned by its sha256).

Field numbers are those of ``onnx.proto`` (ModelProto, GraphProto, NodeProto, AttributeProto,
TensorProto, ValueInfoProto); repeated scalars are written unpacked, which every reader accepts.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

#: TensorProto.DataType by numpy dtype.
_DATA_TYPES = {
    np.dtype(np.float32): 1,
    np.dtype(np.uint8): 2,
    np.dtype(np.int8): 3,
    np.dtype(np.int32): 6,
    np.dtype(np.int64): 7,
    np.dtype(np.float16): 10,
}
_ELEM_INT64 = 7
_ELEM_FLOAT = 1
#: AttributeProto.AttributeType.
_ATTR_FLOAT, _ATTR_INT, _ATTR_STRING, _ATTR_INTS = 1, 2, 3, 7


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64: ten bytes of two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _bytes_field(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _text_field(number: int, value: str) -> bytes:
    return _bytes_field(number, value.encode("utf-8"))


def _float_field(number: int, value: float) -> bytes:
    return _varint(number << 3 | 5) + struct.pack("<f", value)


def tensor(name: str, array: np.ndarray) -> bytes:
    """A TensorProto holding ``array`` (little-endian raw data) under ``name``."""
    array = np.ascontiguousarray(array)
    body = b"".join(_int_field(1, dim) for dim in array.shape)
    body += _int_field(2, _DATA_TYPES[array.dtype])
    body += _text_field(8, name)
    body += _bytes_field(9, array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes())
    return body


def _attribute(name: str, value: int | float | str | Sequence[int]) -> bytes:
    body = _text_field(1, name)
    if isinstance(value, bool | int):
        return body + _int_field(3, int(value)) + _int_field(20, _ATTR_INT)
    if isinstance(value, float):
        return body + _float_field(2, value) + _int_field(20, _ATTR_FLOAT)
    if isinstance(value, str):
        return body + _text_field(4, value) + _int_field(20, _ATTR_STRING)
    return body + b"".join(_int_field(8, item) for item in value) + _int_field(20, _ATTR_INTS)


def _value_info(name: str, elem_type: int, dims: Sequence[int | str]) -> bytes:
    shape = b"".join(
        _bytes_field(1, _int_field(1, dim) if isinstance(dim, int) else _text_field(2, dim)) for dim in dims
    )
    tensor_type = _int_field(1, elem_type) + _bytes_field(2, shape)
    return _text_field(1, name) + _bytes_field(2, _bytes_field(1, tensor_type))


@dataclass
class Graph:
    """An ONNX graph being written: nodes in order, initializers, int64 inputs, a float output."""

    name: str
    nodes: list[bytes] = field(default_factory=list)
    initializers: list[bytes] = field(default_factory=list)
    _count: int = 0

    def constant(self, name: str, array: np.ndarray) -> str:
        """Add an initializer; returns its name."""
        self.initializers.append(tensor(name, array))
        return name

    def node(self, op: str, inputs: Sequence[str], outputs: int = 1, **attributes: object) -> list[str]:
        """Add a node of operator ``op`` (default domain) with fresh output names; returns them.
        An empty input name stands for an omitted optional input."""
        self._count += 1
        names = [f"{op.lower()}_{self._count}_{i}" for i in range(outputs)]
        body = b"".join(_text_field(1, item) for item in inputs)
        body += b"".join(_text_field(2, item) for item in names)
        body += _text_field(3, f"{op}_{self._count}") + _text_field(4, op)
        body += b"".join(_bytes_field(5, _attribute(key, value)) for key, value in attributes.items())  # type: ignore[arg-type]
        self.nodes.append(body)
        return names

    def one(self, op: str, *inputs: str, **attributes: object) -> str:
        """``node`` for an operator with one output; returns its name."""
        return self.node(op, inputs, 1, **attributes)[0]

    def serialise(self, inputs: Sequence[str], output: tuple[str, str], dim: int, opset: int) -> bytes:
        """The ModelProto: ``inputs`` int64 [batch, tokens]; ``output`` = (node output, graph output
        name) float [batch, tokens, dim] (an Identity renames it)."""
        self.one_named("Identity", output[0], output[1])
        graph = b"".join(_bytes_field(1, node) for node in self.nodes)
        graph += _text_field(2, self.name)
        graph += b"".join(_bytes_field(5, init) for init in self.initializers)
        graph += b"".join(
            _bytes_field(11, _value_info(name, _ELEM_INT64, ("batch", "tokens"))) for name in inputs
        )
        graph += _bytes_field(12, _value_info(output[1], _ELEM_FLOAT, ("batch", "tokens", dim)))
        opset_id = _text_field(1, "") + _int_field(2, opset)
        return (
            _int_field(1, 8)  # IR version 8 (ONNX 1.10+)
            + _text_field(2, "remem")
            + _bytes_field(7, graph)
            + _bytes_field(8, opset_id)
        )

    def one_named(self, op: str, source: str, name: str) -> None:
        """A one-input node whose output is named ``name``."""
        body = _text_field(1, source) + _text_field(2, name) + _text_field(3, name) + _text_field(4, op)
        self.nodes.append(body)
