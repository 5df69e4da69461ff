"""The int8 variant of a sentence encoder (``tools/build_model.py`` builds it once, in the repository),
and the check it agrees with the original.

The bundled all-MiniLM-L6-v2 file keeps int8 weights but multiplies in float32 (each weight is a
constant ``Cast(int8) * scale`` or ``DequantizeLinear`` that onnxruntime unfolds when loading), so it
is no faster than fp32. ``make_int8`` folds those weights to float32, quantizes every MatMul
per output channel with dynamic uint8 activations (integer kernels; ``quantize.py``, remem's own code,
so the result does not depend on the installed onnxruntime), keeps the embedding tables as
int8 rows, and drops torch's NaN guards after the attention softmaxes. Callers compare the variant's
vectors with the original's by ``mean_agreement`` on ``AGREEMENT_SENTENCES`` (``MIN_AGREEMENT``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from remem.arrays import FloatArray
from remem.errors import EmbedderError

if TYPE_CHECKING:
    from onnx import GraphProto, ModelProto, NodeProto

    from modelbuild.activations import Ranges

#: The mean cosine to the original model's vectors a variant must reach to be used in its place.
MIN_AGREEMENT = 0.99

#: Embedding tables with at least this many values are stored as int8 rows (word and position tables).
_MIN_TABLE_SIZE = 1 << 16

#: Texts the variant is checked on: notes, questions, identifiers, numbers, mixed case, long passages.
AGREEMENT_SENTENCES: tuple[str, ...] = (
    "Moved the staging cluster to eu-west-1.",
    "Alice prefers short-lived JWTs for the mobile app.",
    "How did we lay out the checkout screen?",
    "What was the root cause of Tuesday's outage?",
    "TODO: rotate the API keys before Friday",
    "Postgres 16 upgrade is blocked by the pgvector extension.",
    "The pricing page now uses a card grid instead of a table.",
    "meeting notes 2024-03-12: decided to drop the weekly digest",
    "ERR_CONNECTION_RESET when calling /v2/orders from the gateway",
    "user_id=48213 reported a double charge on invoice INV-2024-0091",
    "git rebase -i HEAD~3 and squash the fixup commits",
    "kubectl rollout undo deployment/billing-service -n prod",
    "Why is the search index rebuild so slow on large stores?",
    "Buy milk, eggs and coffee beans.",
    "Dentist appointment on the 14th at 9:30.",
    "Remember to call Mum on her birthday.",
    "Which wine goes with grilled salmon?",
    "Bob's team owns the onboarding email flow now.",
    "Feature flags for the March release live in LaunchDarkly.",
    "p95 latency went from 420 ms to 95 ms after caching the wheels.",
    "Use HNSW with M=32 and efConstruction=200 for the vector index.",
    "sha256 8199be6f699a395f99f89df973f9dc52",
    "OAuth2 device flow vs PKCE: which one for the CLI?",
    "The security audit found three medium-severity issues.",
    "Rate limits: 600 requests per minute per token.",
    "Kotlin coroutines replaced the RxJava chains in the Android app.",
    "LGTM",
    "ok",
    "Quarterly OKR: reduce cold start below 300 ms.",
    "Der Bericht ist fertig und liegt im geteilten Ordner.",
    "La réunion de lundi est reportée à mercredi.",
    "IMPORTANT!!! Do NOT deploy on Fridays.",
    "The 3.2.1 hotfix reverts commit a1b2c3d because it broke SSO logins.",
    "Is the embedding model's max sequence length 256 or 512 tokens?",
    "In the retrospective we agreed that on-call handovers should happen in writing, with a short "
    "summary of open incidents, the dashboards that were noisy during the week, any alerts that were "
    "silenced and why, and a list of follow-up tickets with owners, so that the next person does not "
    "have to reconstruct the context from chat history at three in the morning.",
    "Migration plan for the billing service: first, dual-write invoices to the old MySQL schema and the "
    "new Postgres tables behind a feature flag; second, backfill historical invoices in batches of ten "
    "thousand, verifying totals per customer and per month against the ledger export; third, switch "
    "reads to Postgres for internal users only and compare the rendered PDFs byte for byte; fourth, "
    "after a week without discrepancies, switch reads for all customers, keep dual writes for another "
    "billing cycle, and only then drop the MySQL tables, keeping a compressed dump in cold storage for "
    "seven years as the auditors require. Rollback at any step means flipping the flag back.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "Vaccination reduced measles incidence by more than 90 percent in the study cohort.",
)


def mean_agreement(reference: FloatArray, candidate: FloatArray) -> float:
    """Mean cosine between matching rows of two (n, dim) arrays of unit vectors, n ≥ 1."""
    if reference.ndim != 2 or reference.shape != candidate.shape or reference.shape[0] == 0:
        raise EmbedderError(f"cannot compare vectors of shapes {reference.shape} and {candidate.shape}")
    cosines = np.einsum("ij,ij->i", reference.astype(np.float64), candidate.astype(np.float64))
    return float(cosines.mean())


def load_model(source: Path) -> ModelProto:
    """The ONNX model in ``source``, checked by onnx; EmbedderError when it cannot be read or has no
    MatMul to quantize."""
    import onnx  # noqa: PLC0415

    try:
        model = onnx.load(str(source))
        onnx.checker.check_model(model)
    except Exception as exc:  # protobuf and onnx raise assorted untyped errors
        raise EmbedderError(f"cannot read ONNX model {source}: {exc}") from exc
    if not any(node.op_type == "MatMul" for node in model.graph.node):
        raise EmbedderError(f"{source} has no MatMul to quantize; is it a transformer encoder?")
    return model


def make_int8(model: ModelProto, limit: int | None = None) -> str:
    """Turn ``model`` in place into its int8 per-channel dynamically quantized variant, its MatMul
    weights in -``limit``…``limit`` (``quantize.INT8_LIMIT`` when not given); returns its identity
    (``quantize.model_identity``: the same wherever it is built from the same file)."""
    from modelbuild.quantize import INT8_LIMIT, model_identity, quantize_matmuls  # noqa: PLC0415

    try:
        _fold_dequantized_weights(model.graph)
        _int8_embedding_tables(model.graph)
        _drop_nan_guards(model.graph)
        quantize_matmuls(model.graph, INT8_LIMIT if limit is None else limit)
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise EmbedderError(f"cannot convert the ONNX model: {exc}") from exc
    return model_identity(model)


def make_calibrated(model: ModelProto, ranges: Ranges) -> str:
    """Give the int8 variant ``model`` fixed activation scales in place (``activations.calibrate``);
    returns its identity."""
    from modelbuild.activations import calibrate  # noqa: PLC0415
    from modelbuild.quantize import model_identity  # noqa: PLC0415

    try:
        calibrate(model, ranges)
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise EmbedderError(f"cannot calibrate the ONNX model: {exc}") from exc
    return model_identity(model)


def _fold_dequantized_weights(graph: GraphProto) -> None:
    """Replace constant int8 → float32 subgraphs (Cast, Mul by a scale, DequantizeLinear) by float32
    initializers, so that the quantizer sees every MatMul weight as a float constant."""
    from onnx import numpy_helper  # noqa: PLC0415

    consts: dict[str, npt.NDArray[Any]] = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    dequantized: set[str] = set()
    kept = []
    for node in graph.node:
        value = _folded(node, consts, dequantized)
        if value is None:
            kept.append(node)
        else:
            consts[node.output[0]] = value
            dequantized.add(node.output[0])
    used = {name for node in kept for name in node.input} | {output.name for output in graph.output}
    del graph.node[:]
    graph.node.extend(kept)
    del graph.initializer[:]
    graph.initializer.extend(numpy_helper.from_array(v, name) for name, v in consts.items() if name in used)


def _folded(node: NodeProto, consts: dict[str, npt.NDArray[Any]], dequantized: set[str]) -> FloatArray | None:
    """The float32 value of a dequantizing node whose inputs are all constant, else None."""
    inputs = [consts.get(name) for name in node.input if name]
    if any(value is None for value in inputs) or len(node.output) != 1:
        return None
    values = [value for value in inputs if value is not None]
    int8 = values[0].dtype in (np.int8, np.uint8)
    if node.op_type == "Cast" and int8 and _attribute(node, "to", 0) == 1:
        return values[0].astype(np.float32)
    if node.op_type == "Mul" and len(values) == 2 and any(name in dequantized for name in node.input):
        product = values[0] * values[1]
        return product.astype(np.float32) if product.dtype == np.float32 else None
    if node.op_type == "DequantizeLinear" and int8 and not _attribute(node, "block_size", 0):
        return _dequantize_linear(values, _attribute(node, "axis", 1))
    return None


def _dequantize_linear(values: list[npt.NDArray[Any]], axis: int) -> FloatArray:
    quantized, scale = values[0], values[1]
    zero_point = values[2] if len(values) > 2 else np.zeros_like(scale, dtype=quantized.dtype)
    if scale.ndim == 1 and scale.size > 1:  # per-axis: line the scales up along ``axis``
        shape = [1] * quantized.ndim
        shape[axis] = -1
        scale, zero_point = scale.reshape(shape), zero_point.reshape(shape)
    real: FloatArray = (quantized.astype(np.float32) - zero_point.astype(np.float32)) * scale
    return real


def _attribute(node: NodeProto, name: str, default: int) -> int:
    for attribute in node.attribute:
        if attribute.name == name:
            return int(attribute.i)
    return default


def _int8_embedding_tables(graph: GraphProto) -> None:
    """Store large float32 tables read only by row Gathers as int8 rows with one scale per row.

    ``Gather(table, ids)`` becomes ``Cast(Gather(table_q, ids)) * Gather(scales, ids)``: the model
    file stays small and loading has nothing to unfold, at the cost of two small gathers per batch.
    """
    from onnx import numpy_helper  # noqa: PLC0415

    tables = {t.name: t for t in graph.initializer if len(t.dims) == 2 and t.data_type == 1}
    uses: dict[str, list[bool]] = {}
    for node in graph.node:
        for position, name in enumerate(node.input):
            if name in tables:
                row_gather = node.op_type == "Gather" and position == 0 and not _attribute(node, "axis", 0)
                uses.setdefault(name, []).append(row_gather)
    uses.update({output.name: [False] for output in graph.output if output.name in tables})
    converted = set()
    for name, row_gathers in uses.items():
        if not all(row_gathers) or int(np.prod(tables[name].dims)) < _MIN_TABLE_SIZE:
            continue
        table = numpy_helper.to_array(tables[name])
        scales = np.maximum(np.abs(table).max(axis=1, keepdims=True), 1e-12) / 127.0
        quantized = np.clip(np.rint(table / scales), -127, 127).astype(np.int8)
        graph.initializer.remove(tables[name])
        graph.initializer.extend(
            [numpy_helper.from_array(quantized, f"{name}_q8"), numpy_helper.from_array(scales, f"{name}_s8")]
        )
        converted.add(name)
    nodes = [
        new
        for node in graph.node
        for new in (_dequantized_gather(node) if node.input and node.input[0] in converted else [node])
    ]
    del graph.node[:]
    graph.node.extend(nodes)


def _dequantized_gather(gather: NodeProto) -> list[NodeProto]:
    """The four nodes that replace ``gather`` once its table is stored as int8 rows."""
    from onnx import helper  # noqa: PLC0415

    table, ids, output = gather.input[0], gather.input[1], gather.output[0]
    rows, row_scales, real_rows = (f"{output}_{suffix}" for suffix in ("q8", "s8", "f32"))
    return [
        helper.make_node("Gather", [f"{table}_q8", ids], [rows], axis=0),
        helper.make_node("Gather", [f"{table}_s8", ids], [row_scales], axis=0),
        helper.make_node("Cast", [rows], [real_rows], to=1),
        helper.make_node("Mul", [real_rows, row_scales], [output]),
    ]


def _drop_nan_guards(graph: GraphProto) -> None:
    """Remove ``Where(IsNaN(p), c, p)`` after a Softmax ``p`` (torch's export guard for rows whose every
    key is masked, which never occur here: each row's [CLS] is attended). It costs up to a fifth of
    the run time on 256-token batches."""
    softmax = {node.output[0] for node in graph.node if node.op_type == "Softmax"}
    nan_of = {node.output[0]: node.input[0] for node in graph.node if node.op_type == "IsNaN"}
    outputs = {output.name for output in graph.output}
    bypass = {
        node.output[0]: node.input[2]
        for node in graph.node
        if node.op_type == "Where"
        and node.input[2] in softmax
        and nan_of.get(node.input[0]) == node.input[2]
        and node.output[0] not in outputs
    }
    kept = [node for node in graph.node if node.output[0] not in bypass]
    for node in kept:
        node.input[:] = [bypass.get(name, name) for name in node.input]
    used = {name for node in kept for name in node.input} | outputs
    kept = [node for node in kept if node.op_type != "IsNaN" or node.output[0] in used]
    del graph.node[:]
    graph.node.extend(kept)
