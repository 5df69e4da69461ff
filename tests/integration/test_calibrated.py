"""The calibrated variant: fixed activation scales from the ranges remem ships, built beside the
variant, what new stores run — a window's vector the same in any batch — while stores made with the
plain variant keep it; refused once when it agrees too little, then not built again."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

import remem
from helpers import run_cli
from remem.embedders import activations, calibrated, fusion, optimize, runner, variants
from remem.embedders.registry import BUNDLED_MODEL, bundled_files
from remem.embedders.spec import ModelFiles, file_sha256
from remem.errors import EmbedderError

TEXTS = [
    "ok",
    "Lunch is at noon on Fridays",
    "Dinner is at six on Mondays",
    "Bob is allergic to peanuts; avoid them when ordering lunch for the team.",
    "The nightly importer failed with error E1045 while reading the supplier feed, twice in a row.",
    "Lunch is at one on Sundays",
]


@pytest.fixture(scope="module")
def variant(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The bundled model's plain int8 variant, as remem builds it, and its identity."""
    path = tmp_path_factory.mktemp("variant") / "model.int8.onnx"
    return path, optimize.build_int8_variant(bundled_files().model, path)


def _ops(model: onnx.ModelProto) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in model.graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return counts


def test_the_shipped_ranges_are_for_the_variant_remem_builds(variant: tuple[Path, str]) -> None:
    path, identity = variant
    ranges = activations.ranges_for(identity)
    assert ranges is not None and len(ranges) == 24  # 6 layers: Q/K/V input, attention output, FFN in, out
    model = activations.calibrate(onnx.load(str(path)), ranges)
    ops = _ops(model)
    assert "DynamicQuantizeLinear" not in ops and "MatMulInteger" not in ops
    assert (ops["QuantizeLinear"], ops["MatMulIntegerToFloat"]) == (24, 36)
    onnx.checker.check_model(model)
    assert fusion.fuse_encoder(model) == 12  # attention (head width from the fused bias) and GELU


def test_an_activation_without_a_range_is_refused_and_nothing_is_written(
    variant: tuple[Path, str], tmp_path: Path
) -> None:
    path, identity = variant
    ranges = activations.ranges_for(identity)
    assert ranges is not None
    with pytest.raises(ValueError, match="no range for the activation gelu_5"):
        activations.calibrate(onnx.load(str(path)), ranges[:-1])
    with pytest.raises(EmbedderError, match="cannot calibrate"):
        optimize.build_calibrated_variant(path, tmp_path / "model.int8c.onnx", ranges[:-1])
    assert list(tmp_path.iterdir()) == []


def test_a_window_has_one_vector_whatever_runs_beside_it(variant: tuple[Path, str], tmp_path: Path) -> None:
    path, identity = variant
    ranges = activations.ranges_for(identity)
    assert ranges is not None
    made = tmp_path / "model.int8c.onnx"
    optimize.build_calibrated_variant(path, made, ranges)
    embedder = calibrated.calibrated_embedder(
        BUNDLED_MODEL, ModelFiles(made, bundled_files().tokenizer), file_sha256=file_sha256(made)
    )
    ids = embedder._token_ids(TEXTS)
    assert any(len(batch) > 1 for batch in runner.uniform_batches(ids, calibrated.CALIBRATED_BATCH))
    together = embedder.embed_documents(TEXTS).windows
    for text, rows in zip(TEXTS, together, strict=True):
        np.testing.assert_array_equal(embedder.embed_documents([text]).windows[0], rows)
    original = runner.OnnxEmbedder(BUNDLED_MODEL, bundled_files()).embed_documents(TEXTS).windows
    plain = variants.variant_embedder(
        BUNDLED_MODEL, ModelFiles(path, bundled_files().tokenizer), file_sha256=file_sha256(path)
    )
    per_run = plain.embed_documents(TEXTS).windows

    def mean_cosine(vectors: tuple[np.ndarray, ...]) -> float:
        return float(np.mean([a[0] @ b[0] for a, b in zip(original, vectors, strict=True)]))

    assert mean_cosine(together) > mean_cosine(per_run) - 0.003  # as close to the original as per-run scales


def test_a_store_made_with_the_plain_variant_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = tmp_path / "models"
    monkeypatch.setenv("REMEM_MODELS", str(models))
    assert run_cli(["add", "The login sequence uses OAuth device codes"], tmp_path / "new").code == 0
    directory = models / BUNDLED_MODEL.name / "bundled"
    record = json.loads((directory / variants.RECORD_FILE).read_text())
    plain = variants.variant_embedder(
        BUNDLED_MODEL,
        ModelFiles(directory / variants.VARIANT_FILE, bundled_files().tokenizer),
        file_sha256=record["sha256"],
        sha256=record["identity"],
    )
    with remem.open(
        tmp_path / "old", models_dir=models, embedder=plain
    ) as memories:  # as older remem made it
        memories.add("The login sequence uses OAuth device codes")
    with remem.open(tmp_path / "old", models_dir=models, create=False) as memories:
        kept = memories.embedder()
        assert kept.info.sha256 == plain.info.sha256 != BUNDLED_MODEL.model_sha256
        assert kept.files.model == plain.files.model  # the plain variant's file, not the calibrated one's
        # The same vectors up to remem's fusion: the store's embedder runs the variant's cached fused
        # graph (``sessions.py``), ``plain`` (no graph directory) onnxruntime's own graph; measured on
        # TEXTS: up to 3.7e-8 apart (cosine ≥ 0.99999994), while the calibrated file's are 0.954-0.993.
        cosines = np.sum(kept.embed_queries(TEXTS).vectors * plain.embed_queries(TEXTS).vectors, axis=1)
        assert float(np.min(cosines)) >= fusion.MIN_PROBE_COSINE
        assert memories.search("auth flow", k=1)[0].memory.text.startswith("The login sequence")
    with remem.open(tmp_path / "new", models_dir=models, create=False) as memories:
        calibrated_record = json.loads((directory / calibrated.CALIBRATED_RECORD).read_text())
        assert memories.embedder().info.sha256 == calibrated_record["identity"] != plain.info.sha256


def test_a_refused_calibration_leaves_new_stores_on_the_variant_and_is_not_built_again(
    variant: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, identity = variant
    ranges = activations.ranges_for(identity)
    assert ranges is not None
    narrow = tuple((name, -0.01, 0.01) for name, _, _ in ranges)  # clips nearly everything
    monkeypatch.setitem(activations.KNOWN_RANGES, identity, narrow)
    models = tmp_path / "models"
    monkeypatch.setenv("REMEM_MODELS", str(models))
    first = run_cli(["add", "a memory"], tmp_path / "one")
    assert first.code == 0 and "int8 variant" in first.stderr, first.stderr
    directory = models / BUNDLED_MODEL.name / "bundled"
    record = json.loads((directory / calibrated.CALIBRATED_RECORD).read_text())
    assert record["identity"] == "" and record["agreement"] < optimize.MIN_AGREEMENT
    assert not (directory / calibrated.CALIBRATED_FILE).exists()
    with remem.open(tmp_path / "one", create=False) as memories:
        assert memories.model is not None
        assert memories.model.sha256 == json.loads((directory / variants.RECORD_FILE).read_text())["identity"]

    def never(variant: Path, dest: Path, ranges: activations.Ranges) -> str:
        raise AssertionError("built again")

    monkeypatch.setattr(optimize, "build_calibrated_variant", never)
    assert run_cli(["add", "another memory"], tmp_path / "two").code == 0


def test_a_damaged_calibrated_variant_fails_verify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    models = tmp_path / "models"
    monkeypatch.setenv("REMEM_MODELS", str(models))
    assert run_cli(["add", "a memory"], tmp_path / "store").code == 0
    made = models / BUNDLED_MODEL.name / "bundled" / calibrated.CALIBRATED_FILE
    made.write_bytes(made.read_bytes()[:-4] + b"\0\0\0\0")
    verified = run_cli(["model", "verify", BUNDLED_MODEL.name])
    assert verified.code == 2 and "(optimized)" in verified.stdout and "model.int8c.onnx" in verified.stdout
    assert run_cli(["doctor"], tmp_path / "store").code == 2
