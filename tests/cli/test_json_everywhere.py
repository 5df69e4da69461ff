"""Every command prints ``--json`` (issue 53 #2): reindex, model pull/verify/path and token revoke
print one JSON object per line as the others do; and reindex's time is the whole run's, the
embedding included (it said "(0.0 s)" for an 8.7 s run)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

import helpers
import remem
from helpers import run_cli
from remem.testing import FakeEmbedder

#: How long the slow embedder takes for each batch of texts.
PAUSE = 0.4


class SlowEmbedder(FakeEmbedder):
    """The fake embedder taking ``PAUSE`` seconds for each batch of documents: a model's time."""

    def embed_documents(self, texts: Sequence[str]) -> remem.DocumentEmbeddings:
        time.sleep(PAUSE)
        return super().embed_documents(texts)


@pytest.fixture
def waiting(store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store with two memories waiting for their vectors; the CLI embeds slowly from now on."""
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        memories.add("the first memory waiting", embed=False)
        memories.add("the second memory waiting", embed=False)
    monkeypatch.setitem(helpers.CLI, "embedder", SlowEmbedder())
    return store_dir


def test_reindex_says_the_whole_runs_time(waiting: Path) -> None:
    done = run_cli(["reindex"], waiting)
    assert done.code == 0, done.stderr
    assert "Embedded 2 memories that were waiting for their vectors." in done.stderr
    said = re.search(r"\((\d+\.\d) s\)\.$", done.stderr.strip())
    assert said is not None and float(said.group(1)) >= PAUSE, done.stderr


def test_reindex_json(waiting: Path) -> None:
    done = run_cli(["reindex", "--json"], waiting)
    assert done.code == 0, done.stderr
    (line,) = done.stdout.splitlines()
    record = json.loads(line)
    assert {key: record[key] for key in ("vectors", "index", "embedded_pending", "model", "reembedded")} == {
        "vectors": 2,
        "index": "exact",
        "embedded_pending": 2,
        "model": None,
        "reembedded": None,
    }
    assert record["seconds"] >= PAUSE and isinstance(record["rebuilt_keywords"], bool)


def test_token_revoke_json(store_dir: Path) -> None:
    assert run_cli(["token", "add", "--user", "alice", "--name", "laptop"], store_dir).code == 0
    revoked = run_cli(["token", "revoke", "laptop", "--json"], store_dir)
    assert revoked.code == 0, revoked.stderr
    record = json.loads(revoked.stdout)
    assert (record["name"], record["user"], record["revoked"]) == ("laptop", "alice", True)


def test_model_path_and_verify_json(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REMEM_MODELS", str(tmp_path / "models"))
    found = run_cli(["model", "path", "all-minilm-l6-v2", "--json"])
    assert found.code == 0, found.stderr
    record = json.loads(found.stdout)
    assert record["model"] == "all-minilm-l6-v2" and Path(record["path"]).is_file()
    missing = run_cli(["model", "path", "bge-small-en-v1.5", "--json"])
    assert (missing.code, json.loads(missing.stdout)) == (1, {"model": "bge-small-en-v1.5", "path": None})
    checked = run_cli(["model", "verify", "--json"])
    assert checked.code == 0, checked.stderr
    rows = [json.loads(line) for line in checked.stdout.splitlines()]
    assert {row["model"] for row in rows if row["ok"]} == {"all-minilm-l6-v2"}
    assert {
        "model": "bge-small-en-v1.5",
        "installed": False,
        "ok": None,
        "path": None,
        "problem": None,
    } in rows


def test_model_pull_json(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A pull from the stand-in hub of a test model made of the bundled model's files."""
    import dataclasses

    from hub_server import hub_server
    from remem.embedders import registry
    from remem.embedders.spec import ModelFile, file_sha256

    files = registry.bundled_files()
    spec = dataclasses.replace(
        registry.BGE_SMALL_EN_V1_5,
        name="pull-json-test",
        model=ModelFile(file_sha256(files.model), files.model.stat().st_size, "onnx/model.onnx"),
        tokenizer=ModelFile(file_sha256(files.tokenizer), files.tokenizer.stat().st_size, "tokenizer.json"),
        repo="test/pull-json",
    )
    monkeypatch.setitem(registry._KNOWN, spec.name, spec)
    monkeypatch.setenv("REMEM_MODELS", str(tmp_path / "models"))
    with hub_server() as hub:
        for file, path in ((spec.model, files.model), (spec.tokenizer, files.tokenizer)):
            hub.files[f"/{spec.repo}/resolve/{spec.revision}/{file.repo_path}"] = path.read_bytes()
        monkeypatch.setenv("REMEM_HF_ENDPOINT", hub.endpoint)
        pulled = run_cli(["model", "pull", spec.name, "--json"])
    assert pulled.code == 0, pulled.stderr
    record = json.loads(pulled.stdout)
    assert (record["model"], record["built"], record["size_bytes"]) == (spec.name, False, spec.size)
    assert (Path(record["path"]) / "model.onnx").is_file()
