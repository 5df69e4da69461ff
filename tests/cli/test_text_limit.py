"""One memory has a documented size limit (issue 15 #20): a clear error above it, nothing created
or changed, and an option (bounded) that raises it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import remem
from helpers import run_cli
from remem.errors import InvalidInputError
from remem.inputs import MAX_TEXT_CHARS, MAX_TEXT_CHARS_CEILING
from remem.testing import FakeEmbedder

LONG = "word " * (MAX_TEXT_CHARS // 5) + "more"  # just over the limit once trimmed


def test_a_text_over_the_limit_is_refused_before_a_store_is_made(tmp_path: Path) -> None:
    store = tmp_path / "new"
    result = run_cli(["add", LONG], store)
    assert result.code == 2 and not store.exists()
    assert f"more than the limit of {MAX_TEXT_CHARS:,}" in result.stderr and "--max-chars" in result.stderr


def test_max_chars_raises_the_limit(store_dir: Path) -> None:
    assert run_cli(["add", "--max-chars", str(2 * MAX_TEXT_CHARS), LONG], store_dir).code == 0
    edited = run_cli(["edit", "1", LONG + " again"], store_dir)
    assert edited.code == 2 and "more than the limit" in edited.stderr
    raised = run_cli(["edit", "--max-chars", str(2 * MAX_TEXT_CHARS), "1", LONG + " again"], store_dir)
    assert raised.code == 0


@pytest.mark.parametrize("value", ["0", str(MAX_TEXT_CHARS_CEILING + 1), "-5"])
def test_max_chars_is_bounded(store_dir: Path, value: str) -> None:
    result = run_cli(["add", f"--max-chars={value}", "short"], store_dir)
    assert result.code == 2 and "--max-chars" in result.stderr and not store_dir.exists()


@pytest.mark.parametrize("command", [["add", "--lines", "-"], ["add", "--jsonl", "-"], ["import", "-"]])
def test_a_long_line_in_a_batch_is_a_bad_line(store_dir: Path, command: list[str]) -> None:
    def line(text: str) -> str:
        return text if command[-2] == "--lines" else json.dumps({"text": text})

    data = f"{line('short one')}\n{line(LONG)}\n"
    refused = run_cli(command, store_dir, stdin=data)
    assert refused.code == 2 and "line 2: the text has" in refused.stderr
    skipped = run_cli([*command, "--skip-invalid", "--json"], store_dir, stdin=data)
    assert skipped.code == 0 and json.loads(skipped.stdout)["skipped_lines"] == [2]
    raised = run_cli([*command, "--max-chars", str(MAX_TEXT_CHARS * 2)], store_dir, stdin=data)
    assert raised.code == 0


def test_the_api_has_the_same_limit(store_dir: Path) -> None:
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        with pytest.raises(InvalidInputError, match="more than the limit"):
            memories.add(LONG)
        with pytest.raises(InvalidInputError, match=r"record 1: .*more than the limit"):
            memories.import_([{"text": LONG}])
        with pytest.raises(InvalidInputError, match=r"query has .* more than the limit of 100,000$"):
            memories.search("x" * (MAX_TEXT_CHARS + 1))
        memories.max_text_chars = MAX_TEXT_CHARS * 2
        assert not memories.add(LONG).duplicate
        memories.max_text_chars = MAX_TEXT_CHARS_CEILING + 1
        with pytest.raises(InvalidInputError, match=r"^max_text_chars must be between 1 and") as refused:
            memories.add("short")
        assert refused.value.parameter == "max_text_chars"
