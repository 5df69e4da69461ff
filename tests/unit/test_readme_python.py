"""The README's "Python API" examples run as written: every ```python block of that section, in
order, in one namespace, against a store under a temporary $REMEM_HOME, with no real model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from remem.embedders.catalog import ModelCatalog

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Python API"
_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def python_blocks(markdown: str) -> list[tuple[int, str]]:
    """(first line number, code) of each ```python block in the README's Python API section."""
    start = markdown.index(f"\n{SECTION}\n") + 1
    following = re.search(r"^## ", markdown[start + len(SECTION) :], re.MULTILINE)
    end = len(markdown) if following is None else start + len(SECTION) + following.start()
    blocks = []
    for match in _BLOCK.finditer(markdown, start, end):
        blocks.append((markdown.count("\n", 0, match.start(1)) + 1, match.group(1)))
    return blocks


def test_the_section_has_python_examples() -> None:
    markdown = README.read_text(encoding="utf-8")
    assert markdown.count(f"\n{SECTION}\n") == 1
    assert markdown.index(f"\n{SECTION}\n") < markdown.index("\n## Commands\n")
    blocks = python_blocks(markdown)
    assert 2 <= len(blocks) <= 4
    assert "embedder=FakeEmbedder()" in blocks[0][1]


def test_the_python_examples_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("REMEM_HOME", str(home))

    def no_real_model(*args: object, **kwargs: object) -> None:
        raise AssertionError("the README examples must not load a real model")

    monkeypatch.setattr(ModelCatalog, "for_store", no_real_model)
    monkeypatch.setattr(ModelCatalog, "load", no_real_model)

    namespace: dict[str, Any] = {"__name__": "readme_python_api"}
    for line, code in python_blocks(README.read_text(encoding="utf-8")):
        # Padded so that a traceback names the README's own line numbers.
        exec(compile("\n" * (line - 1) + code, str(README), "exec"), namespace)

    examples = [value for name, value in namespace.items() if name.startswith("test_") and callable(value)]
    assert examples, "the README shows a test with FakeEmbedder"
    for number, example in enumerate(examples):
        example(tmp_path / f"example-{number}")

    assert (home / "memories.sqlite3").is_file()  # remem.open() used $REMEM_HOME
    printed = capsys.readouterr().out
    assert "there is no memory 9999" in printed
    assert "1 would be forgotten" in printed
    assert "memories copied; healthy: True" in printed
