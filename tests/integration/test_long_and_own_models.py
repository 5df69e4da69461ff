"""Long memories are searchable in full; a user's own model directory works end to end."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import run_cli
from remem.backends.local import LocalBackend
from remem.embedders.custom import DESCRIPTION_FILE
from remem.embedders.registry import BGE_QUERY_PREFIX, bundled_files

FILLER = " ".join(
    f"Paragraph {i} of the quarterly infrastructure review covers routine capacity planning, "
    "vendor contracts and the on-call rotation in general terms."
    for i in range(14)
)
TAIL_FACT = "The backup tapes are stored in the fireproof safe in the Leeds basement."
LONG_TEXT = f"{FILLER} {TAIL_FACT}"


def test_a_fact_beyond_the_first_window_is_found_and_the_text_stays_whole(store_dir: Path) -> None:
    for text in [LONG_TEXT, "Lunch is at noon on Fridays", "The VPN needs a hardware key"]:
        assert run_cli(["add", text], store_dir).code == 0
    found = run_cli(
        ["search", "where are backup tapes kept?", "--mode", "vector", "--json", "-k", "1"], store_dir
    )
    hit = json.loads(found.stdout)
    assert hit["text"] == LONG_TEXT
    assert found.stderr == ""  # nothing was cut, so there is nothing to warn about
    with LocalBackend.open(store_dir, create=False) as store:
        windows = store.records.vectors_of_memories([hit["id"]])[hit["id"]]
    assert len(windows) >= 2
    exported = [
        json.loads(line) for line in run_cli(["export", "--with-vectors"], store_dir).stdout.splitlines()
    ]
    long_record = next(record for record in exported if record["id"] == hit["id"])
    assert long_record["text"] == LONG_TEXT
    assert long_record["vector"]["windows"] == len(windows)
    assert len(base64.b64decode(long_record["vector"]["float32_base64"])) == 4 * 384 * len(windows)


def test_windows_survive_export_import_with_vectors_reused(store_dir: Path, tmp_path: Path) -> None:
    assert run_cli(["add", LONG_TEXT], store_dir).code == 0
    dump = run_cli(["export", "--with-vectors"], store_dir).stdout
    target = tmp_path / "copy"
    imported = run_cli(["import", "-"], target, stdin=dump)
    assert imported.code == 0, imported.stderr
    assert "1 vectors reused" in imported.stderr
    assert run_cli(["export", "--with-vectors"], target).stdout == dump
    found = run_cli(["search", "backup tapes", "--mode", "vector", "--json"], target)
    assert json.loads(found.stdout.splitlines()[0])["text"] == LONG_TEXT


@pytest.fixture
def own_model(tmp_path: Path) -> Path:
    """A model directory: the bundled ONNX file described with the BGE recipe."""
    directory = tmp_path / "my-encoder"
    directory.mkdir()
    files = bundled_files()
    (directory / "model.onnx").symlink_to(files.model)
    (directory / "tokenizer.json").symlink_to(files.tokenizer)
    description = {"dim": 384, "pooling": "cls", "max_tokens": 512, "query_prefix": BGE_QUERY_PREFIX}
    (directory / DESCRIPTION_FILE).write_text(json.dumps(description))
    return directory


def _remem(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remem", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_an_own_model_directory_serves_a_store_and_is_required_later(
    own_model: Path, store_dir: Path
) -> None:
    store = ["--store", str(store_dir)]
    added = _remem("--model-dir", str(own_model), "add", "The login sequence uses OAuth device codes", *store)
    assert added.returncode == 0, added.stderr
    assert "using your model my-encoder" in added.stderr
    assert _remem("add", "Lunch is at noon", *store, env={"REMEM_MODEL_DIR": str(own_model)}).returncode == 0
    found = _remem("--model-dir", str(own_model), "search", "auth flow", "--json", "-k", "1", *store)
    assert json.loads(found.stdout)["text"].startswith("The login sequence")
    missing = _remem("search", "auth flow", "--mode", "vector", *store)
    assert missing.returncode == 2
    assert "my-encoder" in missing.stderr and "--model-dir" in missing.stderr
    assert missing.stderr.count("\n") == 1
    with LocalBackend.open(store_dir, create=False) as opened:
        assert opened.model is not None
        assert (opened.model.name, opened.model.pooling) == ("my-encoder", "cls")


@pytest.mark.slow
def test_a_store_refuses_another_model(own_model: Path, store_dir: Path) -> None:
    assert run_cli(["add", "made with the bundled model"], store_dir).code == 0
    refused = _remem(
        "--model-dir", str(own_model), "search", "bundled", "--mode", "vector", "--store", str(store_dir)
    )
    assert refused.returncode == 2
    assert "refusing to mix in my-encoder" in refused.stderr
