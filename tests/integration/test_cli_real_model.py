"""The CLI with the real bundled model where a test depends on which model a store holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import FAKE_DIM, FAKE_MODEL, fake_vector, run_cli
from remem import ModelInfo, NewMemory
from remem.backends.local import LocalBackend


@pytest.mark.parametrize(
    ("stamp", "message"),
    [
        (
            FAKE_MODEL,
            "which this remem cannot run (built in: all-minilm-l6-v2, bge-small-en-v1.5, "
            "bge-base-en-v1.5, multilingual-e5-small); "
            "if it is your own model, give --model-dir DIR (or set REMEM_MODEL_DIR)",
        ),
        (
            ModelInfo(name="all-minilm-l6-v2", dim=FAKE_DIM, pooling="mean", sha256="0" * 64),
            "refusing to mix in other vectors: `remem reindex --model all-minilm-l6-v2` re-embeds",
        ),
    ],
)
def test_a_store_made_with_another_model_is_refused(store_dir: Path, stamp: ModelInfo, message: str) -> None:
    with LocalBackend.open(store_dir, create=True) as store:
        store.add(NewMemory(text="made elsewhere"), fake_vector("made elsewhere"), stamp)
    for args in (["search", "anything"], ["add", "a new memory"]):
        result = run_cli(args, store_dir)
        assert result.code == 2
        assert result.stderr.startswith(
            f"Error: the store at {store_dir} holds vectors of model {stamp.name}"
        )
        assert message in result.stderr
    assert len(run_cli(["export"], store_dir).stdout.splitlines()) == 1  # nothing was added
    assert run_cli(["list"], store_dir).code == 0  # reading texts needs no model


def test_show_stats_and_quiet(varied: Path) -> None:
    shown = json.loads(run_cli(["show", "--json", "3"], varied).stdout)
    assert shown["updated_at"] and shown["user"] == "ann"
    missing = run_cli(["show", "2"], varied)
    assert missing.code == 1 and "there is no memory 2" in missing.stderr
    stats = json.loads(run_cli(["stats", "--json"], varied).stdout)
    assert (stats["memories"], stats["by_conversation"], stats["by_tag"]) == (
        3,
        {"c1": 2, "(none)": 1},
        {"csv": 1},
    )
    assert stats["model"].startswith("all-minilm-l6-v2") and stats["disk_bytes"] > 0
    quiet = run_cli(["-q", "add", "no conversation at all", "--store", str(varied)])
    assert quiet.code == 0 and quiet.stderr == ""
