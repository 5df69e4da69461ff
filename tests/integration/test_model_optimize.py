"""`remem model optimize`: a verified int8 per-channel variant of the bundled model, used once made."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import remem
from helpers import run_cli
from remem.backends.local import LocalBackend
from remem.embedders import optimize
from remem.embedders.registry import BUNDLED_MODEL


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One optimized cache for the module (building the variant takes a few seconds)."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture
def optimized(models_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REMEM_MODELS", str(models_dir))
    variant = models_dir / BUNDLED_MODEL.name / "bundled" / "model.int8.onnx"
    if not variant.exists():
        made = run_cli(["model", "optimize"])
        assert made.code == 0, made.stderr
        assert made.stdout.strip() == str(variant)
        assert "agreement 0.99" in made.stderr
    return variant


def test_the_variant_is_recorded_listed_and_verified(optimized: Path) -> None:
    record = json.loads(optimized.with_name("model.int8.json").read_text())
    assert record["agreement"] >= optimize.MIN_AGREEMENT
    assert record["source_sha256"] == BUNDLED_MODEL.model_sha256
    rows = {
        json.loads(line)["name"]: json.loads(line)
        for line in run_cli(["model", "list", "--json"]).stdout.splitlines()
    }
    assert rows[BUNDLED_MODEL.name]["state"] == "bundled, optimized"
    assert run_cli(["model", "verify", BUNDLED_MODEL.name]).code == 0


def test_a_new_store_embeds_with_the_variant_and_records_its_identity(
    optimized: Path, store_dir: Path
) -> None:
    for text in ["The login sequence uses OAuth device codes", "Lunch is at noon on Fridays"]:
        assert run_cli(["add", text], store_dir).code == 0
    found = run_cli(["search", "auth flow", "--mode", "vector", "--json", "-k", "1"], store_dir)
    assert json.loads(found.stdout)["text"].startswith("The login sequence")
    record = json.loads(optimized.with_name("model.int8c.json").read_text())  # the calibrated variant
    with LocalBackend.open(store_dir, create=False) as store:
        assert store.model is not None and store.model.sha256 == record["identity"]
    assert run_cli(["doctor"], store_dir).code == 0


def test_the_variant_gives_a_text_one_vector_alone_or_among_others(optimized: Path, store_dir: Path) -> None:
    texts = [
        "ok",
        "The nightly importer failed with error E1045 while reading the supplier feed, twice in a row, "
        "and the retry queue filled up before anyone noticed the alert on the dashboard.",
        "Lunch is at noon on Fridays",
        "Bob is allergic to peanuts; avoid them when ordering lunch for the team.",
    ]
    with remem.open(store_dir) as memories:
        embedder = memories.embedder()
        calibrated = json.loads(optimized.with_name("model.int8c.json").read_text())
        assert embedder.info.sha256 == calibrated["identity"]  # batches of one length, fixed scales
        together = embedder.embed_documents(texts).windows
        for text, rows in zip(texts, together, strict=True):
            np.testing.assert_array_equal(embedder.embed_documents([text]).windows[0], rows)


def test_a_damaged_variant_fails_verify_and_doctor(optimized: Path, store_dir: Path, tmp_path: Path) -> None:
    assert run_cli(["add", "a memory"], store_dir).code == 0
    saved = optimized.read_bytes()
    try:
        optimized.write_bytes(saved[:-4] + b"\0\0\0\0")
        verified = run_cli(["model", "verify", BUNDLED_MODEL.name])
        assert verified.code == 2 and "(optimized)" in verified.stdout
        assert run_cli(["doctor"], store_dir).code == 2
    finally:
        optimized.write_bytes(saved)
    assert run_cli(["model", "verify", BUNDLED_MODEL.name]).code == 0


def test_a_variant_that_agrees_too_little_is_refused_and_nothing_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_MODELS", str(tmp_path / "models"))
    monkeypatch.setattr(optimize, "MIN_AGREEMENT", 1.000001)
    refused = run_cli(["model", "optimize"])
    assert refused.code == 2 and "refused" in refused.stderr
    directory = tmp_path / "models" / BUNDLED_MODEL.name / "bundled"
    assert sorted(p.name for p in directory.iterdir()) == [".lock"]


def test_reindex_force_re_embeds_a_store_with_its_own_model(optimized: Path, store_dir: Path) -> None:
    assert run_cli(["add", "The login sequence uses OAuth device codes"], store_dir).code == 0
    same = run_cli(["reindex", "--model", BUNDLED_MODEL.name], store_dir)
    assert "already uses" in same.stderr
    forced = run_cli(["reindex", "--model", BUNDLED_MODEL.name, "--force"], store_dir)
    assert forced.code == 0 and f"Re-embedded 1 memories with {BUNDLED_MODEL.name}" in forced.stderr
    found = run_cli(["search", "auth flow", "--mode", "vector", "--json"], store_dir)
    assert json.loads(found.stdout)["text"].startswith("The login sequence")


def test_undo_removes_the_variant(models_dir: Path, optimized: Path) -> None:
    undone = run_cli(["model", "optimize", "--undo"])
    assert undone.code == 0 and not optimized.exists()
    assert not optimized.with_name("model.int8.json").exists()
    assert run_cli(["model", "optimize", "--undo"]).stderr.startswith(f"{BUNDLED_MODEL.name} had no")
