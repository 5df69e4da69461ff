"""A sentencepiece "precompiled charsmap" built from a code point → text table, the form the
``tokenizers`` library's ``Precompiled`` normaliser reads.

The format (sentencepiece's ``normalizer.cc``, read by the ``spm_precompiled`` crate): a little-endian
u32 byte size of a darts-clone double array, the array's u32 units, then the replacement texts, each
ending in a NUL byte. A key (a code point's UTF-8 bytes) is found by walking the array from unit 0:
for each byte ``c``, ``pos ^= c``; the unit there must carry label ``c``; ``pos ^= offset(unit)``.
A unit with its leaf bit set has, at the position it leads to, a value unit (bit 31 set) whose low
bits are the byte offset of the key's replacement text.

Unit bits (darts-clone): label = bits 0–7 (and bit 31, set only in value units, so a value never
matches a label); bit 8 = has a leaf; bit 9 = the offset is shifted by 8; bits 10–30 = offset.
This builder places each node's children at ``base ^ label`` for a base no other node uses and keeps
the array small enough that offsets never need the shift.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

_LEAF = 1 << 8
_VALUE = 1 << 31
_MAX_OFFSET = 1 << 21


class _Node:
    __slots__ = ("children", "value")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        self.value: int | None = None


def _trie(keys: Mapping[bytes, int]) -> _Node:
    root = _Node()
    for key, value in keys.items():
        node = root
        for byte in key:
            node = node.children.setdefault(byte, _Node())
        node.value = value
    return root


class _DoubleArray:
    def __init__(self) -> None:
        self.units = [0] * 256
        self.used = [True] + [False] * 255  # position 0 is the root
        self.bases: set[int] = set()
        self.search_from = 1

    def _grow(self, size: int) -> None:
        if size > len(self.units):
            extra = size - len(self.units) + 256
            self.units += [0] * extra
            self.used += [False] * extra

    def _free_base(self, labels: list[int]) -> int:
        """The first base (not used by another node) where every ``base ^ label`` is free."""
        while self.used[self.search_from]:
            self.search_from += 1
        slot = self.search_from
        while True:  # the first label's slot runs over the free positions
            base = slot ^ labels[0]
            self._grow((base | 0xFF) + 1)
            if base not in self.bases and base > 0 and not any(self.used[base ^ c] for c in labels):
                return base
            slot += 1
            while slot < len(self.used) and self.used[slot]:
                slot += 1

    def place(self, node: _Node, position: int) -> None:
        """Write ``node`` (already at ``position``) and, below it, all its descendants."""
        labels = ([0] if node.value is not None else []) + sorted(node.children)
        base = self._free_base(labels)
        self.bases.add(base)
        for label in labels:
            self.used[base ^ label] = True
        offset = position ^ base
        if offset >= _MAX_OFFSET:
            raise ValueError("charsmap too large for unshifted offsets")
        self.units[position] |= offset << 10 | (_LEAF if node.value is not None else 0)
        if node.value is not None:
            self.units[base] = _VALUE | node.value
        for label, child in sorted(node.children.items()):
            self.units[base ^ label] = label
            self.place(child, base ^ label)


def precompiled_charsmap(table: Mapping[int, str]) -> bytes:
    """The charsmap bytes mapping each code point of ``table`` to its text ("" removes it)."""
    texts = bytearray()
    offsets: dict[str, int] = {}
    keys: dict[bytes, int] = {}
    for code_point, text in sorted(table.items()):
        if text not in offsets:
            offsets[text] = len(texts)
            texts += text.encode("utf-8") + b"\0"
        keys[chr(code_point).encode("utf-8", "surrogatepass")] = offsets[text]
    array = _DoubleArray()
    array.place(_trie(keys), 0)
    # every position a walk can reach (a base ^ any byte) stays inside the array
    del array.units[(max(array.bases) | 0xFF) + 1 :]
    trie = struct.pack(f"<{len(array.units)}I", *array.units)
    return struct.pack("<I", len(trie)) + trie + bytes(texts)
