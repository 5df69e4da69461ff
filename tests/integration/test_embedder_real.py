"""The ONNX pipeline against a fp32 sentence-transformers reference, and its BGE-style options."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from remem.embedders.pooling import l2_normalize
from remem.embedders.registry import BGE_QUERY_PREFIX, BGE_SMALL_EN_V1_5, BUNDLED_MODEL, bundled_files
from remem.embedders.runner import OnnxEmbedder, pad_batch
from remem.embedders.sessions import load_session
from remem.embedders.spec import ModelFiles, ModelSpec, Pooling, file_sha256, verify_model_files
from remem.embedders.windows import split_windows
from remem.errors import EmbedderError

REFERENCE = json.loads((Path(__file__).parent.parent / "data" / "minilm_fp32_reference.json").read_text())

# First values of the shipped model's vector for REFERENCE["sentences"][0] (7-bit weights, uint8
# activations; cosine 0.9934 to the fp32 reference, the same on every CPU's int8 kernels; the 8-bit
# file gave 0.9931 with AVX2 kernels, 0.9942 with VNNI ones). A change here means the tokenizer, pooling,
# normalisation or model file changed.
PINNED_FIRST_VALUES = [-0.041137, 0.0713635, -0.01787376, 0.01596464, 0.00984116]


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder.of(BUNDLED_MODEL, bundled_files())


def _documents(embedder: OnnxEmbedder, texts: list[str]) -> np.ndarray:
    """One row per text (each fits one window)."""
    embedded = embedder.embed_documents(texts)
    assert all(len(rows) == 1 for rows in embedded.windows)
    return np.vstack(embedded.windows)


def test_canonical_vector_is_pinned(embedder: OnnxEmbedder) -> None:
    vector = _documents(embedder, [REFERENCE["sentences"][0]])[0]
    assert vector.dtype == np.float32
    assert vector.shape == (384,)
    np.testing.assert_allclose(vector[:5], PINNED_FIRST_VALUES, atol=1e-4)


def test_vectors_match_the_fp32_sentence_transformers_reference(embedder: OnnxEmbedder) -> None:
    result = embedder.embed_queries(REFERENCE["sentences"])  # the last one is cut, like the reference
    reference = np.asarray(REFERENCE["vectors"], dtype=np.float32)
    cosines = (result.vectors * reference).sum(axis=1)
    # int8 activations and 7-bit weights vs fp32: same pipeline, same truncation (measured: 0.9825
    # lowest, on the cut one, 0.9910 mean; the 8-bit file: 0.9897 lowest, 0.9931 mean)
    assert cosines.min() > 0.98 and cosines.mean() > 0.99, cosines
    np.testing.assert_allclose(np.linalg.norm(result.vectors, axis=1), 1.0, atol=1e-5)


def test_a_long_query_reports_dropped_tokens(embedder: OnnxEmbedder) -> None:
    long_text = REFERENCE["sentences"][-1]
    total = len(embedder._token_ids([long_text])[0])
    result = embedder.embed_queries(["short one", long_text])
    assert total > BUNDLED_MODEL.max_tokens
    assert result.dropped_tokens == (0, total - BUNDLED_MODEL.max_tokens)


def test_a_long_document_is_embedded_window_by_window(embedder: OnnxEmbedder) -> None:
    long_text = " ".join(
        f"Fact {i}: the {i}th server in rack {i % 7} runs service number {i}." for i in range(60)
    )
    ids = embedder._token_ids([long_text])[0]
    windows = split_windows(ids, BUNDLED_MODEL.document_window)
    assert len(windows) >= 3 and max(len(window) for window in windows) == 128  # the training length
    embedded = embedder.embed_documents(["short one", long_text])
    assert [len(rows) for rows in embedded.windows] == [1, len(windows)]
    for window, vector in zip(windows, embedded.windows[1], strict=True):
        input_ids, mask = pad_batch([window])
        session = load_session(str(embedder.files.model), 0, BUNDLED_MODEL.model_sha256)
        (hidden,) = session.run(
            None, {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
        )
        np.testing.assert_allclose(vector, l2_normalize(hidden.mean(axis=1))[0], atol=1e-4)


def test_a_stored_text_is_read_in_windows_of_the_training_length_and_a_query_whole(
    embedder: OnnxEmbedder,
) -> None:
    text = " ".join(f"Fact {i}: rack {i % 7} runs service {i}." for i in range(22))
    ids = embedder._token_ids([text])[0]
    assert BUNDLED_MODEL.document_window == 128 < len(ids) < BUNDLED_MODEL.max_tokens == 256
    windows = split_windows(ids, 128)
    assert len(embedder.embed_documents([text]).windows[0]) == len(windows) >= 2
    assert embedder.embed_queries([text]).dropped_tokens == (0,)


def test_batching_and_padding_do_not_change_vectors(embedder: OnnxEmbedder) -> None:
    texts = ["a", "a much longer sentence about databases and layouts", "mid length text here", "z" * 50]
    together = _documents(embedder, texts)
    alone = np.vstack([_documents(embedder, [t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=2e-5)
    tiny_batches = _documents(OnnxEmbedder(BUNDLED_MODEL, embedder.files, batch_size=1), texts)
    np.testing.assert_allclose(tiny_batches, together, atol=2e-5)


def _bge_recipe() -> ModelSpec:
    """The BGE recipe (query prefix, CLS pooling, 512-token windows) on the bundled model's files."""
    return dataclasses.replace(
        BGE_SMALL_EN_V1_5, dim=BUNDLED_MODEL.dim, model=BUNDLED_MODEL.model, tokenizer=BUNDLED_MODEL.tokenizer
    )


def test_query_prefix_reaches_queries_only(embedder: OnnxEmbedder) -> None:
    bge_style = _bge_recipe()
    prefixed = OnnxEmbedder(bge_style, embedder.files)
    query = prefixed.embed_queries(["auth flow"]).vectors[0]
    document = _documents(prefixed, ["auth flow"])[0]
    np.testing.assert_allclose(query, _documents(prefixed, [BGE_QUERY_PREFIX + "auth flow"])[0], atol=1e-5)
    assert float(query @ document) < 0.99
    plain = dataclasses.replace(bge_style, query_prefix="")
    np.testing.assert_allclose(
        document, OnnxEmbedder(plain, embedder.files).embed_queries(["auth flow"]).vectors[0], atol=1e-5
    )


def test_bge_recipe_windows_are_512_tokens(embedder: OnnxEmbedder) -> None:
    bge_style = OnnxEmbedder(_bge_recipe(), embedder.files)
    text = "word " * 1200
    embedded = bge_style.embed_documents([text])
    windows = split_windows(bge_style._token_ids([text])[0], 512)
    assert len(embedded.windows[0]) == len(windows) == 4  # each shares half of the one before
    query_tokens = len(bge_style._token_ids([BGE_QUERY_PREFIX + text])[0])
    assert bge_style.embed_queries([text]).dropped_tokens == (query_tokens - 512,)  # queries are cut


def test_cls_pooling_takes_the_first_token(embedder: OnnxEmbedder) -> None:
    cls_spec = dataclasses.replace(BUNDLED_MODEL, pooling=Pooling.CLS, max_tokens=512)
    cls_vector = _documents(OnnxEmbedder(cls_spec, embedder.files), ["The login sequence"])[0]
    ids = embedder._tokenize(["The login sequence"])[0].ids
    input_ids, mask = pad_batch([ids])
    session = load_session(str(embedder.files.model), 0, BUNDLED_MODEL.model_sha256)
    (hidden,) = session.run(
        None, {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)}
    )
    np.testing.assert_allclose(cls_vector, l2_normalize(hidden[:, 0, :])[0], atol=1e-5)
    mean_vector = _documents(embedder, ["The login sequence"])[0]
    assert float(cls_vector @ mean_vector) < 0.999


def test_a_damaged_model_file_is_refused(embedder: OnnxEmbedder, tmp_path: Path) -> None:
    assert verify_model_files(BUNDLED_MODEL, embedder.files) == BUNDLED_MODEL.model_sha256
    damaged = tmp_path / "model.onnx"
    shutil.copyfile(embedder.files.model, damaged)
    with damaged.open("r+b") as handle:
        handle.seek(1000)
        byte = handle.read(1)
        handle.seek(1000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    assert file_sha256(damaged) != BUNDLED_MODEL.model_sha256
    with pytest.raises(EmbedderError, match="damaged"):
        verify_model_files(BUNDLED_MODEL, ModelFiles(model=damaged, tokenizer=embedder.files.tokenizer))
    with pytest.raises(EmbedderError, match="cannot read"):
        verify_model_files(BUNDLED_MODEL, ModelFiles(model=tmp_path / "absent.onnx", tokenizer=damaged))
