"""The pieces multilingual-e5-small is built with, on small inputs: the charsmap builder against the
``tokenizers`` library's own reader, the protobuf writer against ``onnx``'s checker and onnxruntime,
the int8 requantisation, and the weight-file reader's refusals. (The real build: tests/integration/
test_multilingual.py.)"""

from __future__ import annotations

import random
import struct

import numpy as np
import onnx
import pytest
from tokenizers import normalizers

from remem.embedders.e5.charsmap import precompiled_charsmap
from remem.embedders.e5.graph import per_channel_int8
from remem.embedders.e5.protobuf import Graph
from remem.embedders.e5.weights import read_weights
from remem.embedders.sessions import session_of
from remem.errors import EmbedderError

#: Code points of every UTF-8 length, mapped to nothing, to one and to several code points.
TABLE = {
    0x0009: " ",  # tab → space (one byte)
    0x00A0: " ",  # no-break space (two bytes)
    0x00AD: "",  # soft hyphen: removed
    0x2163: "IV",  # Roman numeral four (three bytes) → two letters
    0xFF21: "A",  # fullwidth A
    0xFF76: "カ",  # halfwidth katakana → fullwidth
    0x3000: " ",  # ideographic space
    0x1D400: "A",  # mathematical bold A (four bytes)
    0x1F100: "0.",  # digit zero full stop
}


def _normaliser(table: dict[int, str]) -> normalizers.Normalizer:
    return normalizers.Precompiled(precompiled_charsmap(table))


def test_every_mapped_code_point_becomes_its_text() -> None:
    normaliser = _normaliser(TABLE)
    for code_point, text in TABLE.items():
        assert normaliser.normalize_str(chr(code_point)) == text, hex(code_point)


def test_code_points_outside_the_table_are_kept_even_when_their_bytes_start_like_a_key() -> None:
    normaliser = _normaliser(TABLE)
    neighbours = [cp + delta for cp in TABLE for delta in (-1, 1, 64, 256)]
    others = [*neighbours, *random.Random(0).sample(range(0x20, 0x2FFFF), 3000)]
    for code_point in others:
        if code_point in TABLE or 0xD800 <= code_point <= 0xDFFF or code_point < 0x20:
            continue
        assert normaliser.normalize_str(chr(code_point)) == chr(code_point), hex(code_point)


def test_a_large_table_still_fits_and_reads_back() -> None:
    table = {cp: chr(cp + 1) for cp in range(0x4E00, 0x4E00 + 4000, 3)}  # 1334 three-byte keys
    normaliser = _normaliser(table)
    for code_point, text in list(table.items())[::37]:
        assert normaliser.normalize_str(chr(code_point)) == text
    assert normaliser.normalize_str("a" + chr(0x4E01) + "b") == "a" + chr(0x4E01) + "b"


def test_the_charsmap_is_the_same_bytes_every_time() -> None:
    assert precompiled_charsmap(TABLE) == precompiled_charsmap(dict(reversed(TABLE.items())))


def _tiny_graph() -> bytes:
    graph = Graph("tiny")
    table = graph.constant("table", np.arange(12, dtype=np.float32).reshape(4, 3))
    rows = graph.one("Gather", table, "input_ids")
    scaled = graph.one("Mul", rows, graph.constant("two", np.array(2.0, np.float32)))
    mask = graph.one(
        "Cast", graph.one("Unsqueeze", "attention_mask", graph.constant("ax", np.array([2]))), to=1
    )
    return graph.serialise(["input_ids", "attention_mask"], (graph.one("Mul", scaled, mask), "out"), 3, 17)


def test_the_protobuf_writer_makes_a_model_onnx_accepts_and_onnxruntime_runs() -> None:
    model = _tiny_graph()
    onnx.checker.check_model(onnx.load_model_from_string(model), full_check=True)
    session = session_of(model, 1, name="tiny")
    ids = np.array([[3, 0, 1]], dtype=np.int64)
    (out,) = session.run(None, {"input_ids": ids, "attention_mask": np.array([[1, 1, 0]], dtype=np.int64)})
    expected = np.arange(12, dtype=np.float32).reshape(4, 3)[ids] * 2 * np.array([1, 1, 0])[None, :, None]
    np.testing.assert_array_equal(out, expected)
    assert _tiny_graph() == model  # the same bytes every time


def test_per_channel_int8_keeps_each_row_within_half_a_step() -> None:
    weight = np.random.default_rng(0).normal(size=(6, 32)).astype(np.float32)
    weight[2] = 0.0  # an all-zero row stays zero
    codes, scales = per_channel_int8(weight)
    assert codes.dtype == np.int8 and codes.shape == (32, 6) and scales.shape == (6,)
    restored = codes.T.astype(np.float64) * scales[:, None]
    assert np.all(np.abs(restored - weight) <= scales[:, None] / 2 + 1e-7)
    assert np.abs(codes).max() == 127 and not codes[:, 2].any()


@pytest.mark.parametrize(
    ("data", "says"),
    [(b"GGUF" + bytes(60), "no E5S1 magic"), (b"E5S1" + struct.pack("<I", 1) + bytes(10), "damaged")],
)
def test_a_file_that_is_not_a_weight_file_is_refused(data: bytes, says: str) -> None:
    with pytest.raises(EmbedderError, match=says):
        read_weights(data)
