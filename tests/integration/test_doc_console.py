"""The `$ remem …` examples of the README and docs/ print what the pages show.

Each page's console blocks run in order, in bash, with the real bundled model, in a fresh home
directory (the store is ~/.local/share/remem, as a new user's); each block's output (stdout and
stderr, as a terminal shows them) must equal the page's with times, dates, decimal numbers and sizes
masked. A page that no longer matches is regenerated with `python tools/doc_blocks.py --write`."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from doc_support import doc_blocks

ROOT = Path(__file__).resolve().parents[2]


def console_pages() -> list[Path]:
    return [
        page
        for page in doc_blocks.pages()
        if any(b.lang in ("console", "sh") and b.not_run is None for b in doc_blocks.blocks(page))
    ]


@pytest.mark.parametrize("page", console_pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_the_console_blocks_print_what_the_page_shows(page: Path) -> None:
    differing = []
    for outcome in doc_blocks.run_page(page):
        if not outcome.same:
            diff = difflib.unified_diff(
                doc_blocks.mask(outcome.shown).splitlines(),
                doc_blocks.mask(outcome.printed).splitlines(),
                "shown",
                "printed",
                lineterm="",
            )
            differing.append(f"{page.name}:{outcome.block.line}\n" + "\n".join(diff))
    assert not differing, "\n\n".join(differing) + "\n(regenerate: python tools/doc_blocks.py --write)"


def test_the_readme_tour_runs() -> None:
    assert ROOT / "README.md" in console_pages()


def test_a_wrong_output_is_found_and_rewritten(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        'Try:\n\n```console\n$ remem list; echo "exit $?"\nexit 0\n'
        "$ echo 2026-01-01 0.25\n1999-12-31 0.5\n```\n",
        encoding="utf-8",
    )
    outcomes = list(doc_blocks.run_page(page))
    assert [o.same for o in outcomes] == [False]  # `list` of no store exits 1; the masked line agrees
    assert doc_blocks.write(outcomes) == 1
    assert "exit 1\n" in page.read_text(encoding="utf-8")
    assert [o.same for o in doc_blocks.run_page(page)] == [True]


def test_a_failing_script_block_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    script = "```sh\nremem add 'a memory'\nremem show 1\n```\n\n```sh\nremem show 2\n```\n"
    page.write_text(script, encoding="utf-8")
    assert [o.same for o in doc_blocks.run_page(page)] == [True, False]
