"""`remem serve` runs each search's vector products on one thread (its concurrency comes from its
requests: OpenBLAS's own threads only spun, doubling the CPU a search cost), unless the user set
the thread count; the setting is made before the server loads numpy."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import remem.commands.mcp as command
from helpers import run_cli


@pytest.mark.parametrize("preset", [None, "2"])
def test_the_server_runs_blas_on_one_thread_unless_told_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, preset: str | None
) -> None:
    seen: dict[str, Any] = {}

    def serve_http(store: Any, **options: Any) -> None:
        seen.update({name: os.environ.get(name) for name in command.SERVER_THREADS})

    for name in command.SERVER_THREADS:
        if preset is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, preset)
    monkeypatch.setattr(command, "serve_http", serve_http)
    outcome = run_cli(["serve", "--port", "0"], store=tmp_path / "store")
    assert outcome.code == 0, outcome
    assert seen == dict.fromkeys(command.SERVER_THREADS, preset or "1")
