"""The options that concern the whole run are taken before the command and after it (issue 53 #1):
``remem --store X list`` as ``remem list --store X``; ``--quiet`` and ``--model-dir`` after the
command as before it."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_cli


def _texts(store: Path) -> list[str]:
    listed = run_cli(["list", "--json"], store)
    assert listed.code == 0, listed.stderr
    return [json.loads(line)["text"] for line in listed.stdout.splitlines()]


def test_store_before_the_command(tmp_path: Path) -> None:
    store = tmp_path / "store"
    added = run_cli(["--store", str(store), "add", "the VPN key changes every 90 days"])
    assert added.code == 0, added.stderr
    assert _texts(store) == ["the VPN key changes every 90 days"]
    for argv in (["--store", str(store), "list"], [f"--store={store}", "search", "VPN key"]):
        shown = run_cli(argv)
        assert shown.code == 0, shown.stderr
        assert "the VPN key changes" in shown.stdout


def test_store_before_a_command_of_a_group(tmp_path: Path) -> None:
    store = tmp_path / "store"
    made = run_cli(["--store", str(store), "token", "add", "--user", "alice", "--name", "laptop"])
    assert made.code == 0, made.stderr
    listed = run_cli(["token", "list", "--json"], store)
    assert [json.loads(line)["name"] for line in listed.stdout.splitlines()] == ["laptop"]


def test_the_store_after_the_command_wins(tmp_path: Path) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    added = run_cli(["--store", str(before), "add", "where it goes", "--store", str(after)])
    assert added.code == 0, added.stderr
    assert _texts(after) == ["where it goes"]
    assert not before.exists()


def test_quiet_after_the_command(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert run_cli(["add", "said twice"], store).code == 0
    again = run_cli(["add", "said twice", "-q"], store)
    assert again.code == 0 and again.stdout == "1\n"
    assert again.stderr == ""  # not "Already stored as memory 1"
    assert run_cli(["add", "said twice"], store).stderr != ""


def test_model_dir_after_the_command(tmp_path: Path) -> None:
    empty = tmp_path / "model"
    empty.mkdir()
    before = run_cli(["--model-dir", str(empty), "model", "list"])
    after = run_cli(["model", "list", "--model-dir", str(empty)])
    assert before.code == after.code == 2
    assert after.stderr == before.stderr and str(empty) in after.stderr
