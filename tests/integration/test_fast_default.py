"""Fast by default: a new store runs the bundled model's int8 variant, built once on first use and
recorded by its own sha256; existing stores keep their file; a variant that cannot be built leaves
the original in use, said once; the optimised graph is cached; long texts tokenise in pieces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime
import pytest

import remem
from helpers import run_cli
from remem.embedders import optimize, sessions
from remem.embedders.registry import BUNDLED_MODEL, bundled_files
from remem.embedders.runner import OnnxEmbedder
from remem.embedders.spec import ModelFiles
from remem.errors import ModelMismatchError


def _variant_dir(models: Path) -> Path:
    return models / BUNDLED_MODEL.name / "bundled"


def _stamp(store: Path) -> str:
    with remem.open(store, create=False) as memories:
        assert memories.model is not None
        return memories.model.sha256


def test_a_new_store_builds_the_variant_once_and_records_its_sha256(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = tmp_path / "models"
    monkeypatch.setenv("REMEM_MODELS", str(models))
    first = run_cli(["add", "The login sequence uses OAuth device codes"], tmp_path / "one")
    assert first.code == 0, first.stderr
    assert "int8 variant" in first.stderr and "built it once" in first.stderr
    record = json.loads((_variant_dir(models) / "model.int8.json").read_text())
    assert record["agreement"] >= optimize.MIN_AGREEMENT
    assert _stamp(tmp_path / "one") == record["sha256"] != BUNDLED_MODEL.model_sha256
    second = run_cli(["add", "Lunch is at noon"], tmp_path / "two")
    assert "int8 variant" in second.stderr and "built it once" not in second.stderr
    found = run_cli(["search", "auth flow", "--mode", "vector", "--json", "-k", "1"], tmp_path / "one")
    assert json.loads(found.stdout)["text"].startswith("The login sequence")
    assert list(_variant_dir(models).glob("model.int8.optimized-*.onnx"))  # the cached graph
    assert run_cli(["doctor"], tmp_path / "one").code == 0


def test_an_existing_store_keeps_the_original_file_until_reindex_moves_it(store_dir: Path) -> None:
    original = OnnxEmbedder(BUNDLED_MODEL, bundled_files())
    with remem.open(store_dir, embedder=original) as memories:
        memories.add("The login sequence uses OAuth device codes")
    assert run_cli(["add", "Lunch is at noon"], store_dir).code == 0
    with remem.open(store_dir, create=False) as memories:
        embedder = memories.embedder()
        assert isinstance(embedder, OnnxEmbedder) and embedder.files.model == bundled_files().model
    moved = run_cli(["reindex", "--model", BUNDLED_MODEL.name], store_dir)
    assert moved.code == 0 and "Re-embedded 2 memories" in moved.stderr
    assert _stamp(store_dir) != BUNDLED_MODEL.model_sha256
    assert run_cli(["search", "auth flow"], store_dir).code == 0


def test_a_variant_that_cannot_be_built_leaves_the_original_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_MODELS", str(tmp_path / "models"))
    monkeypatch.setattr(optimize, "MIN_AGREEMENT", 1.000001)
    made = run_cli(["add", "a memory"], tmp_path / "one")
    assert made.code == 0 and "original all-minilm-l6-v2 file" in made.stderr and "refused" in made.stderr
    assert _stamp(tmp_path / "one") == BUNDLED_MODEL.model_sha256
    assert "variant" not in run_cli(["add", "another memory"], tmp_path / "one").stderr  # said once

    def no_second_try(*_: object) -> None:
        raise AssertionError("the failed build was tried again")

    monkeypatch.setattr(optimize, "build_int8_variant", no_second_try)
    again = run_cli(["add", "a memory"], tmp_path / "two")
    assert again.code == 0 and "refused" in again.stderr  # the remembered reason, no rebuild


def test_a_store_whose_variant_is_not_this_machines_is_refused_with_the_way_out(store_dir: Path) -> None:
    assert run_cli(["add", "a memory"], store_dir).code == 0
    with remem.open(store_dir) as memories:
        catalog = memories.catalog
        recorded = memories.model
    assert recorded is not None
    other = remem.ModelInfo(recorded.name, recorded.dim, recorded.pooling, "0" * 64)
    with pytest.raises(ModelMismatchError, match=r"remem reindex --model all-minilm-l6-v2"):
        catalog.for_store(other, str(store_dir))


def test_the_cached_optimised_graph_gives_the_same_vectors(tmp_path: Path) -> None:
    source = tmp_path / "model.int8.onnx"
    optimize.build_int8_variant(bundled_files().model, source)
    texts = list(optimize.AGREEMENT_SENTENCES)
    fresh = OnnxEmbedder(BUNDLED_MODEL, ModelFiles(source, bundled_files().tokenizer))
    cached = OnnxEmbedder(
        BUNDLED_MODEL, ModelFiles(source, bundled_files().tokenizer), threads=1, graph_dir=tmp_path
    )
    expected = fresh.embed_queries(texts).vectors
    first = cached.embed_queries(texts).vectors  # optimises and saves the graph
    graph = sessions.cached_graph(tmp_path, source, onnxruntime.__version__)
    assert graph is not None and graph.is_file()
    sessions.load_session.cache_clear()
    second = cached.embed_queries(texts).vectors  # loads the saved graph
    np.testing.assert_allclose(first, expected, atol=1e-5)
    np.testing.assert_allclose(second, expected, atol=1e-5)


def test_a_long_text_is_tokenised_in_pieces_to_the_same_ids() -> None:
    embedder = OnnxEmbedder(BUNDLED_MODEL, bundled_files())
    sentence = "The pricing page's card grid, naïve café;\nAlice reviewed PR 4821 (billing-service) twice."
    text = " ".join(sentence for _ in range(1_000))
    assert len(text) > 3 * 20_000
    assert embedder._token_ids([text, "short"])[0] == embedder._tokenizer().encode(text).ids
    assert embedder.count_tokens(text) == len(embedder._tokenizer().encode(text).ids)
