"""The README and docs/ as a newcomer reads them: every code block runs or says why it cannot, the
Python examples run as written, every link leads somewhere, and the README stays short.

The console blocks (`$ remem …` with their output) run with the real model in
tests/integration/test_doc_console.py; here the Python blocks run, one namespace per page, in order,
against a store under a temporary $REMEM_HOME, with the fake embedder and no real model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from doc_support import doc_blocks
from remem.embedders.catalog import ModelCatalog

ROOT = Path(__file__).resolve().parents[2]
PAGES = doc_blocks.pages()
DOC_PAGES = [
    "commands",
    "search",
    "assistants",
    "python-api",
    "team-store",
    "serve",
    "ui",
    "scaling",
    "models",
    "output",
    "data",
    "performance",
    "architecture",
    "import",
]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def unmarked(page: Path) -> list[tuple[int, str]]:
    """The blocks of a page that would neither run nor say why not: (line, language)."""
    return [
        (block.line, block.lang or "(none)")
        for block in doc_blocks.blocks(page)
        if block.not_run is None and block.lang not in doc_blocks.RUN_LANGS
    ]


def test_every_block_runs_or_says_why_not() -> None:
    assert {_name(page): unmarked(page) for page in PAGES} == {_name(page): [] for page in PAGES}
    for page in PAGES:
        for block in doc_blocks.blocks(page):
            if block.lang == "console" and block.not_run is None:
                assert doc_blocks.steps(block.code), f"{_name(page)}:{block.line}: no $ command"


def test_an_unmarked_block_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Config:\n\n```json\n{}\n```\n\n<!-- not run: a file -->\n```json\n{}\n```\n\n```\nplain\n```\n",
        encoding="utf-8",
    )
    assert unmarked(page) == [(4, "json"), (13, "(none)")]


def test_the_test_command_is_where_ci_reads_it() -> None:
    """.ci/run takes the second line after the marker: the command inside the ```sh block."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    at = lines.index("<!-- test-command -->")
    assert lines[at + 1] == "```sh"
    assert lines[at + 2].startswith("python3 -m venv .venv && ") and "python -m pytest" in lines[at + 2]
    marked = [b for b in doc_blocks.blocks(ROOT / "README.md") if b.code.startswith("python3 -m venv")]
    assert len(marked) == 1 and marked[0].not_run is not None


def test_the_readme_is_short_and_links_every_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    assert "bench/" not in readme  # no benchmarks in the README: they are in docs/performance.md
    for name in DOC_PAGES:
        assert f"(docs/{name}.md)" in readme, name
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    assert sorted(p.stem for p in (ROOT / "docs").glob("*.md") if p.stem != "README") == sorted(DOC_PAGES)
    assert [re.search(rf"\({name}\.md\)", index) is not None for name in DOC_PAGES] == [True] * len(DOC_PAGES)


def _slug(heading: str) -> str:
    """The anchor a code host gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```$", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    return {_slug(m[1]) for m in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE)}


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_link_leads_somewhere(page: Path) -> None:
    text = re.sub(r"^```.*?^```$", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # https://, mailto:
        path, _, anchor = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        if not goal.exists() or (anchor and goal.suffix == ".md" and anchor not in _anchors(goal)):
            broken.append(target)
    assert broken == []


def python_pages() -> list[Path]:
    return [page for page in PAGES if any(b.lang == "python" for b in doc_blocks.blocks(page))]


@pytest.mark.parametrize("page", python_pages(), ids=_name)
def test_the_python_blocks_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("REMEM_HOME", str(home))

    def no_real_model(*args: object, **kwargs: object) -> None:
        raise AssertionError("the docs' Python examples must not load a real model")

    monkeypatch.setattr(ModelCatalog, "for_store", no_real_model)
    monkeypatch.setattr(ModelCatalog, "load", no_real_model)

    namespace: dict[str, Any] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    for block in doc_blocks.blocks(page):
        if block.lang == "python" and block.not_run is None:
            # Padded so that a traceback names the page's own line numbers.
            exec(compile("\n" * (block.line - 1) + block.code, str(page), "exec"), namespace)
    examples = [value for name, value in namespace.items() if name.startswith("test_") and callable(value)]
    for number, example in enumerate(examples):
        example(tmp_path / f"example-{number}")

    if page.name == "python-api.md":
        assert examples, "the page shows a test with FakeEmbedder"
        assert (home / "memories.sqlite3").is_file()  # remem.open() used $REMEM_HOME
        printed = capsys.readouterr().out
        assert "there is no memory 9999" in printed
        assert "1 would be forgotten" in printed
        assert "memories copied; healthy: True" in printed


def test_the_python_api_page_has_its_examples() -> None:
    blocks = [b for b in doc_blocks.blocks(ROOT / "docs" / "python-api.md") if b.lang == "python"]
    assert len(blocks) >= 3
    assert "embedder=FakeEmbedder()" in blocks[0].code


def test_the_architecture_page_names_every_package_and_only_real_files() -> None:
    """docs/architecture.md (a reference, not a catalogue) names every package of src/remem, and
    no file that does not exist."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    source = ROOT / "src" / "remem"
    packages = {str(path.parent.relative_to(source)) for path in source.rglob("*/__init__.py")}
    assert sorted(p for p in packages if f"{p}/" not in page) == []
    named = set(re.findall(r"\b(\w+\.py)\b", page))
    folders = [ROOT / name for name in ("src", "tests", "tools", "bench")]
    anywhere = {path.name for folder in folders for path in folder.rglob("*.py")}
    assert sorted(named - anywhere) == []
