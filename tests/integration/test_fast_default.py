"""The int8 variant is opt-in per machine: a new store runs the original file (its note says how to
go faster) until `remem model optimize` makes the variant, then new stores run it, recorded by its
own sha256; older stores keep their file until `reindex --model` moves them; the optimised graph is
cached; long texts tokenise in pieces."""

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


def test_a_new_store_runs_the_original_until_optimize_makes_the_variant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = tmp_path / "models"
    monkeypatch.setenv("REMEM_MODELS", str(models))
    first = run_cli(["add", "The login sequence uses OAuth device codes"], tmp_path / "one")
    assert first.code == 0, first.stderr
    assert "`remem model optimize all-minilm-l6-v2` makes embedding about 2x faster" in first.stderr
    assert _stamp(tmp_path / "one") == BUNDLED_MODEL.model_sha256  # never built implicitly
    assert not (_variant_dir(models) / "model.int8.json").exists()
    assert run_cli(["model", "optimize"], None).code == 0
    record = json.loads((_variant_dir(models) / "model.int8.json").read_text())
    assert record["agreement"] >= optimize.MIN_AGREEMENT
    second = run_cli(["add", "Lunch is at noon"], tmp_path / "two")
    assert "int8 variant" in second.stderr and "built it once" not in second.stderr
    assert _stamp(tmp_path / "two") == record["sha256"] != BUNDLED_MODEL.model_sha256
    assert _stamp(tmp_path / "one") == BUNDLED_MODEL.model_sha256  # the older store keeps its file
    found = run_cli(["search", "auth flow", "--mode", "vector", "--json", "-k", "1"], tmp_path / "one")
    assert json.loads(found.stdout)["text"].startswith("The login sequence")
    assert run_cli(["search", "lunch", "--json", "-k", "1"], tmp_path / "two").code == 0
    assert list(_variant_dir(models).glob("model.int8.optimized-*.onnx"))  # the cached graph
    assert run_cli(["doctor"], tmp_path / "two").code == 0
    moved = run_cli(["reindex", "--model", BUNDLED_MODEL.name], tmp_path / "one")
    assert moved.code == 0 and "Re-embedded 1 memor" in moved.stderr, moved.stderr
    assert _stamp(tmp_path / "one") == record["sha256"]


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
