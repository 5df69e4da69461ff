"""Library errors speak the library's words: an argument is named as the Python API names it
(``min_score``) and carried as the error's ``parameter``; a front-end rephrases it with its own
names (``RememError.phrased``). No library module writes a command-line option into a message."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import remem
from remem.errors import InvalidInputError, RememError, phrase
from remem.testing import FakeEmbedder

SOURCE = Path(__file__).resolve().parents[2] / "src" / "remem"
#: The front-ends: they speak their own words (options, tool arguments).
FRONT_ENDS = ("cli.py", "commands/", "mcp/")
#: A command-line option: two dashes and a letter, not inside a word.
OPTION = re.compile(r"(?<![\w-])--[A-Za-z]")
#: A shell command to run, in backticks (``remem reindex --model NAME``): the same instruction to a
#: person whichever front-end shows it.
COMMAND = re.compile(r"`remem [^`]*`")
#: Library strings that may still name an option, each with the reason.
ALLOWED: dict[str, str] = {}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string the code makes, but docstrings: an f-string whole, its values as ``X`` (so
    ``f"--{name}"`` reads ``--X``)."""
    docs, inside, found = _docstrings(tree), set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inside.update(id(part) for part in node.values)
            text = "".join(p.value if isinstance(p, ast.Constant) else "X" for p in node.values)
            found.append((node.lineno, str(text)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs | inside:
            found.append((node.lineno, node.value))
    return found


def _library_modules() -> list[Path]:
    paths = sorted(SOURCE.rglob("*.py"))
    return [p for p in paths if not p.relative_to(SOURCE).as_posix().startswith(FRONT_ENDS)]


def test_no_library_string_names_a_command_line_option() -> None:
    modules = _library_modules()
    assert len(modules) > 50 and SOURCE / "inputs.py" in modules and SOURCE / "cli.py" not in modules
    found = []
    for path in modules:
        for line, text in _strings(ast.parse(path.read_text())):
            said = COMMAND.sub("", text)
            if OPTION.search(said) and not any(allowed in said for allowed in ALLOWED):
                found.append(f"{path.relative_to(SOURCE)}:{line}: {text!r}")
    assert not found, "\n".join(found)


def test_the_scan_sees_options_however_a_string_is_made() -> None:
    code = 'a = "--min-score is"\nb = f"--{name} must"\nc = "run `remem reindex --model x`"\n'
    flagged = [t for _, t in _strings(ast.parse(code)) if OPTION.search(COMMAND.sub("", t))]
    assert flagged == ["--X must", "--min-score is"]


def test_the_api_names_min_score_as_its_argument(tmp_path: Path) -> None:
    with remem.open(tmp_path / "store", embedder=FakeEmbedder()) as memories:
        memories.add("a memo")
        with pytest.raises(InvalidInputError) as refused:
            memories.search("memo", min_score=3, mode="keyword")
    error = refused.value
    assert str(error) == "min_score must be between 0 and 1 (a relevance), not 3.0"
    assert (error.parameter, error.mentions, error.names) == ("min_score", (), ("min_score",))
    assert error.phrased({"min_score": "--min-score", "mode": "--mode"}) == (
        "--min-score must be between 0 and 1 (a relevance), not 3.0"
    )


def test_filters_name_their_own_fields() -> None:
    with pytest.raises(InvalidInputError) as refused:
        remem.Filters.of(since="2026-01-02", until="2026-01-01")
    assert (str(refused.value), refused.value.parameter, refused.value.mentions) == (
        "since must be before until",
        "since",
        ("until",),
    )


def test_phrase_renames_the_first_mention_of_each_name_only() -> None:
    rename = {"user": "--user", "meta": "--meta", "tags": "--tag"}
    assert phrase("user 'user' must not be empty", ["user"], rename) == "--user 'user' must not be empty"
    assert (
        phrase("a meta key is odd; metadata stays", ["meta"], rename) == "a --meta key is odd; metadata stays"
    )
    assert phrase("tags and user", ["tags"], rename) == "--tag and user"  # only the names given
    assert phrase("k must be at least 1", ["k"], rename) == "k must be at least 1"  # not renamed: kept
    assert phrase("hnsw.m must be", ["hnsw.m"], {"hnsw.m": "--hnsw-m"}) == "--hnsw-m must be"
    assert phrase("use mode.", ["mode"], {"mode": "--mode"}) == "use --mode."
    assert phrase("a b", ["a", "b"], {"a": "b", "b": "c"}) == "b c"  # one pass: a new name stays


def test_every_remem_error_has_a_parameter_and_mentions() -> None:
    plain = RememError("something")
    assert (plain.parameter, plain.mentions, plain.names) == (None, (), ())
    assert remem.errors.MemoryNotFoundError([3]).phrased({"memory": "--memory"}) == "there is no memory 3"


def test_a_date_note_says_how_to_turn_it_off_in_the_librarys_words(tmp_path: Path) -> None:
    with remem.open(tmp_path / "store", embedder=FakeEmbedder()) as memories:
        memories.add("a memo")
        result = memories.search("memo from today")
    assert result.dates is not None and result.notes[-1].endswith(
        "(local time): memories from then rank higher; dates=False ignores them"
    )
    cli = result.notes_saying("--no-dates ignores them")
    assert cli[:-1] == result.notes[:-1]
    assert cli[-1].endswith("memories from then rank higher; --no-dates ignores them")
