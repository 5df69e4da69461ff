"""A `remem model pull` that fails (issue 53 #2) leaves no empty model directory and no lock behind,
keeps what a cut-off download already got (the next pull resumes it), and names the mirror setting
an offline user needs. Downloads come from a stand-in hub on 127.0.0.1, or from a port nobody
listens on (no network)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import run_cli
from hub_server import HubServer, hub_server
from remem.embedders.registry import BGE_SMALL_EN_V1_5

SPEC = BGE_SMALL_EN_V1_5


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty model cache as REMEM_MODELS."""
    monkeypatch.setenv("REMEM_MODELS", str(tmp_path / "models"))
    return tmp_path / "models"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, models: Path) -> Iterator[HubServer]:
    """The stand-in hub as REMEM_HF_ENDPOINT (it serves nothing until told)."""
    with hub_server() as server:
        monkeypatch.setenv("REMEM_HF_ENDPOINT", server.endpoint)
        yield server


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _left(models: Path) -> list[str]:
    return sorted(str(p.relative_to(models)) for p in models.rglob("*")) if models.exists() else []


def test_no_network_leaves_nothing_and_names_the_mirror_setting(
    monkeypatch: pytest.MonkeyPatch, models: Path
) -> None:
    monkeypatch.setenv("REMEM_HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    failed = run_cli(["model", "pull", SPEC.name])
    assert failed.code == 2 and failed.stderr.count("\n") == 1
    assert failed.stderr.startswith("Error: cannot download ")
    assert failed.stderr.endswith("(from 127.0.0.1; a mirror: set REMEM_HF_ENDPOINT)\n")
    assert _left(models) == []  # not bge-small-en-v1.5/<revision>/.lock
    listed = run_cli(["model", "list", "--json"])
    state = {row["name"]: row["state"] for row in map(json.loads, listed.stdout.splitlines())}
    assert state[SPEC.name] == "not installed"


def test_a_refused_file_leaves_nothing(hub: HubServer, models: Path) -> None:
    failed = run_cli(["model", "pull", SPEC.name])
    assert failed.code == 2 and "HTTP 404" in failed.stderr and "REMEM_HF_ENDPOINT" in failed.stderr
    assert _left(models) == []


def test_a_cut_download_keeps_its_part_for_the_next_pull(hub: HubServer, models: Path) -> None:
    path = f"/{SPEC.repo}/resolve/{SPEC.revision}/{SPEC.model.repo_path}"
    hub.files[path] = bytes(SPEC.model.size)
    hub.cut[path] = 1_000
    cut = run_cli(["model", "pull", SPEC.name])
    assert cut.code == 2
    directory = models / SPEC.name / SPEC.revision
    assert (directory / "model.onnx.part").stat().st_size == 1_000 and (directory / ".lock").exists()
