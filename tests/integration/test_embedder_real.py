"""The ONNX pipeline against a fp32 sentence-transformers reference, and its BGE-style options."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from remem.embedders.pooling import l2_normalize
from remem.embedders.registry import DEFAULT_MODEL, locate
from remem.embedders.runner import OnnxEmbedder, _load_session, pad_batch
from remem.embedders.spec import ModelFiles, Pooling, file_sha256, verify_model_files
from remem.errors import EmbedderError

REFERENCE = json.loads((Path(__file__).parent.parent / "data" / "minilm_fp32_reference.json").read_text())

# First values of the bundled int8 model's vector for REFERENCE["sentences"][0], pinned when the
# pipeline was first checked against the fp32 reference (cosine 0.9996). A change here means the
# tokenizer, pooling, normalisation or model file changed.
PINNED_FIRST_VALUES = [-0.04786108, 0.07635598, -0.02038344, 0.01745196, 0.00043046]


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder(DEFAULT_MODEL, locate(DEFAULT_MODEL))


def test_canonical_vector_is_pinned(embedder: OnnxEmbedder) -> None:
    vector = embedder.embed_documents([REFERENCE["sentences"][0]]).vectors[0]
    assert vector.dtype == np.float32
    assert vector.shape == (384,)
    np.testing.assert_allclose(vector[:5], PINNED_FIRST_VALUES, atol=1e-4)


def test_vectors_match_the_fp32_sentence_transformers_reference(embedder: OnnxEmbedder) -> None:
    result = embedder.embed_documents(REFERENCE["sentences"])
    reference = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    cosines = (result.vectors * reference).sum(axis=1)
    assert cosines.min() > 0.998, cosines  # int8 weights vs fp32: same pipeline, same truncation
    np.testing.assert_allclose(np.linalg.norm(result.vectors, axis=1), 1.0, atol=1e-5)


def test_long_text_reports_dropped_tokens(embedder: OnnxEmbedder) -> None:
    long_text = REFERENCE["sentences"][-1]
    total = embedder.count_tokens(long_text)
    result = embedder.embed_documents(["short one", long_text])
    assert total > DEFAULT_MODEL.max_tokens
    assert result.dropped_tokens == (0, total - DEFAULT_MODEL.max_tokens)


def test_batching_and_padding_do_not_change_vectors(embedder: OnnxEmbedder) -> None:
    texts = ["a", "a much longer sentence about databases and layouts", "mid length text here", "z" * 50]
    together = embedder.embed_documents(texts).vectors
    alone = np.vstack([embedder.embed_documents([t]).vectors for t in texts])
    np.testing.assert_allclose(together, alone, atol=2e-5)
    tiny_batches = OnnxEmbedder(DEFAULT_MODEL, embedder.files, batch_size=1).embed_documents(texts)
    np.testing.assert_allclose(tiny_batches.vectors, together, atol=2e-5)


def test_query_prefix_reaches_queries_only(embedder: OnnxEmbedder) -> None:
    prefix = "Represent this sentence for searching relevant passages: "
    prefixed = OnnxEmbedder(dataclasses.replace(DEFAULT_MODEL, query_prefix=prefix), embedder.files)
    query = prefixed.embed_queries(["auth flow"]).vectors[0]
    document = prefixed.embed_documents(["auth flow"]).vectors[0]
    np.testing.assert_allclose(query, embedder.embed_documents([prefix + "auth flow"]).vectors[0], atol=1e-5)
    np.testing.assert_allclose(document, embedder.embed_documents(["auth flow"]).vectors[0], atol=1e-5)
    assert float(query @ document) < 0.99


def test_cls_pooling_takes_the_first_token(embedder: OnnxEmbedder) -> None:
    cls_spec = dataclasses.replace(DEFAULT_MODEL, pooling=Pooling.CLS, max_tokens=512)
    cls_vector = OnnxEmbedder(cls_spec, embedder.files).embed_documents(["The login sequence"]).vectors[0]
    ids = embedder._tokenize(["The login sequence"])[0].ids
    input_ids, mask = pad_batch([ids])
    session = _load_session(str(embedder.files.model), 0)
    (hidden,) = session.run(
        None, {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
    )
    np.testing.assert_allclose(cls_vector, l2_normalize(hidden[:, 0, :])[0], atol=1e-5)
    mean_vector = embedder.embed_documents(["The login sequence"]).vectors[0]
    assert float(cls_vector @ mean_vector) < 0.999


def test_a_damaged_model_file_is_refused(embedder: OnnxEmbedder, tmp_path: Path) -> None:
    assert verify_model_files(DEFAULT_MODEL, embedder.files) == DEFAULT_MODEL.model_sha256
    damaged = tmp_path / "model.onnx"
    shutil.copyfile(embedder.files.model, damaged)
    with damaged.open("r+b") as handle:
        handle.seek(1000)
        byte = handle.read(1)
        handle.seek(1000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    assert file_sha256(damaged) != DEFAULT_MODEL.model_sha256
    with pytest.raises(EmbedderError, match="damaged"):
        verify_model_files(DEFAULT_MODEL, ModelFiles(model=damaged, tokenizer=embedder.files.tokenizer))
    with pytest.raises(EmbedderError, match="cannot read"):
        verify_model_files(DEFAULT_MODEL, ModelFiles(model=tmp_path / "absent.onnx", tokenizer=damaged))
