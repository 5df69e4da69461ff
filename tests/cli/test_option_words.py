"""The library's errors name arguments as the Python API does (``min_score``); the command line
says them with its own options (``--min-score``, ``--tag`` for ``tags``, ``--hnsw-m`` for
``hnsw.m``), read from the running command's parameters, and leaves every other word as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

import helpers
from helpers import run_cli
from remem.cli import app, register_commands
from remem.commands.common import option_names
from remem.testing import FakeEmbedder

#: (arguments, the one error line the CLI prints).
ERRORS = [
    (
        ["search", "--mode", "keyword", "--min-score", "-0.3", "memo"],
        "--min-score must be between 0 and 1 (a relevance), not -0.3",
    ),
    (["search", "--min-score", "3", "memo"], "--min-score must be between 0 and 1 (a relevance), not 3.0"),
    (["context", "--min-score", "-2", "memo"], "--min-score must be between 0 and 1 (a relevance), not -2.0"),
    (["list", "--since", "2026-01-02", "--until", "2026-01-01"], "--since must be before --until"),
    (
        ["list", "--until", "soon"],
        "--until 'soon' is neither an ISO date/time (2026-11-29, 2026-11-29T14:00), an age (30m, 12h, 7d) "
        "nor a time word (yesterday, last week, monday, 16 november 2023)",
    ),
    (["list", "--user", " "], "--user must not be empty"),
    (["list", "--role", "a\nb"], "--role 'a\\nb' must not contain control characters (newlines, tabs…)"),
    (["list", "--tag", "ok", "--tag", " "], "--tag must not be empty"),
    (["list", "--meta", "novalue"], "--meta 'novalue' is not key=value"),
    (["list", "--meta", "=value"], "--meta has an empty key"),
    (["forget", "--where"], "--where needs at least one filter (to forget all, delete the store)"),
    (["reindex", "--index", "ivf"], "--index must be one of exact, hnsw, auto, not 'ivf'"),
    (["reindex", "--hnsw-m", "1"], "--hnsw-m must be at least 2 and at most 128, not 1"),
    (
        ["reindex", "--ef-construction", "5000"],
        "--ef-construction must be at least 2 and at most 4096, not 5000",
    ),
    (["reindex", "--ef-search", "1"], "--ef-search must be at least 2 and at most 65536, not 1"),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding one memory (the module's commands change nothing). Made before the autouse
    fixtures run, so with its own fake embedder and model cache: never the developer's."""
    path = tmp_path_factory.mktemp("words") / "store"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("REMEM_MODELS", str(tmp_path_factory.mktemp("words-models")))
        patch.setitem(helpers.CLI, "embedder", FakeEmbedder())
        assert run_cli(["add", "a memo"], path).code == 0
    return path


@pytest.mark.parametrize(("arguments", "line"), ERRORS, ids=[" ".join(row[0][:3]) for row in ERRORS])
def test_the_cli_says_its_own_option_names(store: Path, arguments: list[str], line: str) -> None:
    result = run_cli(arguments, store)
    assert (result.code, result.stderr) == (2, f"Error: {line}\n")


def test_a_bad_line_names_the_option_that_raises_the_limit(store_dir: Path) -> None:
    data = "short\n" + "x" * 200 + "\n"
    refused = run_cli(["add", "--lines", "-", "--max-chars", "100"], store_dir, stdin=data)
    assert refused.stderr == (
        "Error: line 2: the text has 200 characters, more than the limit of 100 (--max-chars raises it, up "
        "to 10,000,000); nothing was added (--skip-invalid adds the rest)\n"
    )
    skipped = run_cli(["add", "--lines", "-", "--max-chars", "100", "--skip-invalid"], store_dir, stdin=data)
    assert skipped.code == 0 and skipped.stderr.startswith(
        "Warning: skipped line 2: the text has 200 characters, more than the limit of 100 (--max-chars "
        "raises it, up to 10,000,000)\n"
    )


def test_a_directory_of_other_files_names_the_store_option(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    result = run_cli(["add", "a memo"], tmp_path)
    assert result.stderr == (
        f"Error: --store (or $REMEM_HOME) must be an empty or new directory: {tmp_path} holds other files "
        "and is not a remem store\n"
    )


def test_option_names_come_from_the_commands_parameters() -> None:
    register_commands([])
    command = typer.main.get_command(app)
    search, reindex = (command.commands[name] for name in ("search", "reindex"))  # type: ignore[attr-defined]
    names = option_names([search, reindex])
    assert {key: names[key] for key in ("min_score", "mode", "tags", "since", "store", "hnsw.m")} == {
        "min_score": "--min-score",
        "mode": "--mode",
        "tags": "--tag",
        "since": "--since",
        "store": "--store",
        "hnsw.m": "--hnsw-m",
    }
