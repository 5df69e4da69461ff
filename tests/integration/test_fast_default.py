"""The int8 variant by default: a new store builds it once per machine on its first embed (under a
lock, one build however many processes start at once), with its calibrated variant, records the
calibrated one's identity — the same for every build, so a store opens with another machine's
build — and runs it; `model optimize --undo` keeps new
stores on the original file without breaking stores made with the variant; a refused variant is not
tried again; the optimised graph is cached; long texts tokenise in pieces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime
import pytest

import remem
from helpers import run_cli
from remem.embedders import optimize, sessions
from remem.embedders.registry import BUNDLED_MODEL, bundled_files
from remem.embedders.runner import OnnxEmbedder
from remem.embedders.spec import ModelFiles, file_sha256
from remem.errors import ModelMismatchError

BUILT_NOW = "built once on this machine just now"


def _variant_dir(models: Path) -> Path:
    return models / BUNDLED_MODEL.name / "bundled"


def _record(models: Path, name: str = "model.int8c.json") -> dict[str, object]:
    """The calibrated variant's record (what new stores run), or another record in the directory."""
    record: dict[str, object] = json.loads((_variant_dir(models) / name).read_text())
    return record


def _stamp(store: Path) -> str:
    with remem.open(store, create=False) as memories:
        assert memories.model is not None
        return memories.model.sha256


def _find(store: Path, query: str) -> str:
    found = run_cli(["search", query, "--mode", "vector", "--json", "-k", "1"], store)
    assert found.code == 0, found.stderr
    return str(json.loads(found.stdout)["text"])


def test_a_new_store_builds_the_variant_once_and_another_machine_builds_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, there = tmp_path / "models-here", tmp_path / "models-there"
    monkeypatch.setenv("REMEM_MODELS", str(here))
    first = run_cli(["add", "The login sequence uses OAuth device codes"], tmp_path / "one")
    assert first.code == 0 and BUILT_NOW in first.stderr, first.stderr
    record = _record(here)
    assert record["agreement"] >= optimize.MIN_AGREEMENT  # type: ignore[operator]
    assert record["variant_identity"] == _record(here, "model.int8.json")["identity"]
    assert _stamp(tmp_path / "one") == record["identity"] != BUNDLED_MODEL.model_sha256
    second = run_cli(["add", "Lunch is at noon"], tmp_path / "two")
    assert "int8 variant" in second.stderr and BUILT_NOW not in second.stderr
    assert _stamp(tmp_path / "two") == record["identity"]
    assert list(_variant_dir(here).glob("model.int8c.optimized-*.onnx"))  # the cached graph
    assert run_cli(["doctor"], tmp_path / "one").code == 0
    monkeypatch.setenv("REMEM_MODELS", str(there))  # another machine: its own cache, its own build
    assert _find(tmp_path / "one", "auth flow").startswith("The login sequence")
    assert _record(there)["identity"] == record["identity"]
    assert run_cli(["add", "Standup moved to 9:45"], tmp_path / "one").code == 0
    assert _find(tmp_path / "one", "daily meeting time") == "Standup moved to 9:45"


def test_processes_starting_at_once_build_the_variant_once(tmp_path: Path) -> None:
    env = {**os.environ, "REMEM_MODELS": str(tmp_path / "models"), "REMEM_HOME": str(tmp_path / "home")}
    stores = [tmp_path / f"store-{n}" for n in range(3)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "remem", "add", f"memory {n}", "--store", str(store)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n, store in enumerate(stores)
    ]
    outcomes = [(process.wait(timeout=300), process.stderr.read().decode()) for process in processes]  # type: ignore[union-attr]
    assert [code for code, _ in outcomes] == [0, 0, 0], outcomes
    assert sum(BUILT_NOW in stderr for _, stderr in outcomes) == 1, outcomes
    assert {_stamp(store) for store in stores} == {_record(tmp_path / "models")["identity"]}


def test_undo_keeps_new_stores_on_the_original_and_older_stores_working(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = tmp_path / "models"
    monkeypatch.setenv("REMEM_MODELS", str(models))
    assert run_cli(["add", "The login sequence uses OAuth device codes"], tmp_path / "fast").code == 0
    assert list(_variant_dir(models).glob("model.int8c.optimized-*.data"))  # the cached graph's weights
    undone = run_cli(["model", "optimize", "--undo"])
    assert undone.code == 0 and "new stores use its original file" in undone.stderr
    left = sorted(p.name for p in _variant_dir(models).glob("model.int8*"))
    assert left == ["model.int8.off"]  # variants, records, graphs and weights gone; the marker stays
    plain = run_cli(["add", "Lunch is at noon"], tmp_path / "plain")
    assert "switched off by `remem model optimize --undo`" in plain.stderr, plain.stderr
    assert _stamp(tmp_path / "plain") == BUNDLED_MODEL.model_sha256
    assert _find(tmp_path / "fast", "auth flow").startswith("The login sequence")  # rebuilt for it
    assert _stamp(tmp_path / "fast") == _record(models)["identity"]
    still = run_cli(["add", "x"], tmp_path / "still-plain")
    assert "switched off by `remem model optimize --undo`" in still.stderr, still.stderr
    assert _stamp(tmp_path / "still-plain") == BUNDLED_MODEL.model_sha256  # off though built again
    assert run_cli(["model", "optimize"]).code == 0
    assert _stamp(tmp_path / "plain") == BUNDLED_MODEL.model_sha256  # a store keeps its file
    assert "int8 variant" in run_cli(["add", "Lunch is at noon"], tmp_path / "fast-again").stderr
    assert _stamp(tmp_path / "fast-again") == _record(models)["identity"]


def test_a_refused_variant_is_said_once_per_store_and_not_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_MODELS", str(tmp_path / "models"))
    monkeypatch.setattr(optimize, "MIN_AGREEMENT", 1.000001)
    first = run_cli(["add", "a memory"], tmp_path / "one")
    assert first.code == 0 and "agrees only" in first.stderr and "original" in first.stderr, first.stderr
    assert _stamp(tmp_path / "one") == BUNDLED_MODEL.model_sha256
    assert not (_variant_dir(tmp_path / "models") / "model.int8.onnx").exists()

    def never(source: Path, dest: Path) -> str:
        raise AssertionError("built again")

    monkeypatch.setattr(optimize, "build_int8_variant", never)
    second = run_cli(["add", "another memory"], tmp_path / "two")
    assert second.code == 0 and "agrees only" in second.stderr, second.stderr
    assert _stamp(tmp_path / "two") == BUNDLED_MODEL.model_sha256


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
    files = ModelFiles(source, bundled_files().tokenizer)
    made = file_sha256(source)
    fresh = OnnxEmbedder(
        BUNDLED_MODEL, files, batch_size=1, file_sha256=made
    )  # one text per run, as a variant
    cached = OnnxEmbedder(BUNDLED_MODEL, files, batch_size=1, threads=1, file_sha256=made, graph_dir=tmp_path)
    expected = fresh.embed_queries(texts).vectors
    first = cached.embed_queries(texts).vectors  # optimises and saves the graph
    graph = sessions.cached_graph(tmp_path, source, made, onnxruntime.__version__)
    assert graph is not None and graph.is_file()
    weights = sessions.weights_file(graph)  # the weights beside the graph, read when it loads
    assert weights.stat().st_size > 20 * graph.stat().st_size
    written = [source, graph, weights, sessions.record_file(graph)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([".lock", *(p.name for p in written)])
    sessions.load_session.cache_clear()
    second = cached.embed_queries(texts).vectors  # loads the saved graph
    np.testing.assert_allclose(first, expected, atol=1e-5)
    np.testing.assert_allclose(second, expected, atol=1e-5)
    weights.write_bytes(weights.read_bytes()[:1000])  # damaged: the graph is optimised and saved again
    sessions.load_session.cache_clear()
    np.testing.assert_allclose(cached.embed_queries(texts).vectors, expected, atol=1e-5)
    assert weights.stat().st_size > 20 * graph.stat().st_size
    sessions.load_session.cache_clear()


def test_a_long_text_is_tokenised_in_pieces_to_the_same_ids() -> None:
    embedder = OnnxEmbedder(BUNDLED_MODEL, bundled_files())
    sentence = "The pricing page's card grid, naïve café;\nAlice reviewed PR 4821 (billing-service) twice."
    text = " ".join(sentence for _ in range(1_000))
    assert len(text) > 3 * 20_000
    assert embedder._token_ids([text, "short"])[0] == embedder._tokenizer().encode(text).ids
    assert embedder.count_tokens(text) == len(embedder._tokenizer().encode(text).ids)


def test_without_onnx_a_new_store_uses_the_original_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_cli(["add", "made with the variant"], tmp_path / "made").code == 0  # the run's cache
    monkeypatch.setenv("REMEM_MODELS", str(tmp_path / "models"))
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    refused = run_cli(["search", "variant", "--mode", "vector"], tmp_path / "made")
    assert refused.code == 2 and "needs the onnx package" in refused.stderr, refused.stderr
    added = run_cli(["add", "a memory"], tmp_path / "one")
    assert added.code == 0, added.stderr
    assert "original all-minilm-l6-v2 file" in added.stderr and "needs the onnx package" in added.stderr
    assert _stamp(tmp_path / "one") == BUNDLED_MODEL.model_sha256
    assert not (_variant_dir(tmp_path / "models") / "model.int8.off").exists()  # tried again next time
    monkeypatch.delitem(sys.modules, "onnx")
    assert BUILT_NOW in run_cli(["add", "a memory"], tmp_path / "two").stderr
