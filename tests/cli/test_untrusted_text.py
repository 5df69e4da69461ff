"""Memories are untrusted text (issue 15 #9, #10, #21): terminal escapes and invisible formatting
are shown, not obeyed, and refused in names; a bare CR forges no CSV row or Markdown block; a BOM
and zero-width characters at the edges are not text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_cli

HOSTILE = (
    "title\x1b]0;pwned\x07 link \x1b]8;;http://evil\x1b\\here\x1b]8;;\x1b\\"
    " clear\x1b[2J back\x08\x08 cr\rover \x9b31m"
)


def test_terminal_escapes_in_a_memory_are_shown_not_obeyed(store_dir: Path) -> None:
    """Issue 15 #9: ESC/CSI/OSC, BEL, backspace, CR and C1 bytes reach human output as visible
    escapes; --json stays exact."""
    assert run_cli(["add", "--user", "ann", "--tag", "t", HOSTILE], store_dir).code == 0
    for args in (["list"], ["search", "title"], ["show", "1"], ["context", "title"], ["stats"]):
        shown = run_cli(args, store_dir).stdout
        assert not any(char in shown for char in "\x1b\x07\x08\r\x9b"), (args, shown)
    assert "\\x1b]0;pwned\\x07" in run_cli(["list"], store_dir).stdout
    assert json.loads(run_cli(["show", "--json", "1"], store_dir).stdout)["text"] == HOSTILE


def test_invisible_formatting_in_text_is_shown_and_refused_in_names(store_dir: Path) -> None:
    """A bidi override makes "\\u202enimda" look like "admin": escaped in text, refused in names."""
    assert run_cli(["add", "ask \u202enimda for\u200bthe key"], store_dir).code == 0
    listed = run_cli(["list"], store_dir).stdout
    assert "\u202e" not in listed and "\\u202enimda" in listed and "\\u200b" in listed
    refused = run_cli(["add", "--user", "\u202enimda", "hello"], store_dir)
    assert refused.code == 2 and "invisible formatting characters" in refused.stderr
    assert run_cli(["add", "--tag", "ok\u200b", "hello"], store_dir).code == 2
    family = run_cli(["add", "family 👨\u200d👩\u200d👧 photo"], store_dir)
    assert family.code == 0 and "👨\u200d👩\u200d👧" in run_cli(["list"], store_dir).stdout


def test_a_bare_cr_cannot_start_a_csv_row_or_a_markdown_block(store_dir: Path) -> None:
    """Issue 15 #10: a CR inside a text stays inside its quoted CSV cell (no unguarded `=cmd` cell
    of its own); in Markdown no line of a memory can forge a heading, a list item or a link."""
    import csv
    import io

    text = "harmless\r=cmd|' /C calc'!A0\r# Forged heading\r- forged item\n[click](javascript:alert(1))"
    assert run_cli(["add", "--conversation", "c1 [x](http://e)", text], store_dir).code == 0
    exported = run_cli(["export", "-f", "csv"], store_dir).stdout
    assert '"harmless\r=cmd' in exported  # quoted: one cell
    (row,) = csv.DictReader(io.StringIO(exported, newline=""))
    assert row["text"] == text
    markdown = run_cli(["export", "-f", "markdown"], store_dir).stdout
    lines = markdown.splitlines()
    assert "## Conversation: c1 \\[x\\](http://e)" in lines
    assert not [line for line in lines if line.lstrip().startswith(("# F", "- forged", "[click"))]
    assert "  \\# Forged heading" in lines and "  \\- forged item" in lines


@pytest.mark.parametrize("source", ["argument", "stdin", "lines", "jsonl"])
def test_a_bom_and_zero_width_edges_are_trimmed_and_alone_are_empty(store_dir: Path, source: str) -> None:
    """Issue 15 #21: a UTF-8 file's BOM or zero-width characters at the edges are not text."""
    text, blank = "\ufeff\u200bthe heater is set to 21 degrees\u200b", "\ufeff \u200b\u2060"
    data = {"jsonl": json.dumps({"text": text}) + "\n"}.get(source, text + "\n")
    args = {"argument": ["add", text], "stdin": ["add", "-"], "lines": ["add", "--lines", "-"]}
    added = run_cli(args.get(source, ["add", "--jsonl", "-"]), store_dir, stdin=data)
    assert added.code == 0, added.stderr
    assert json.loads(run_cli(["show", "--json", "1"], store_dir).stdout)["text"] == (
        "the heater is set to 21 degrees"
    )
    assert run_cli(["add", blank], store_dir).code == 2
    assert run_cli(["add", "-"], store_dir, stdin=blank).code == 2
