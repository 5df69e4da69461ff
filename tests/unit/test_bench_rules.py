"""The benchmarks keep the rules of the house: none edits ``sys.path``, imports from ``tests/`` or
imports a private name of remem, and none imports another that imports it back (they share
``bench/_harness.py``, which imports no benchmark)."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import import_circles

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _trees() -> dict[str, ast.Module]:
    trees = {path.stem: ast.parse(path.read_text(encoding="utf-8")) for path in BENCH.glob("*.py")}
    assert len(trees) > 5 and "_harness" in trees  # the folder was read
    return trees


def _imported(tree: ast.Module) -> list[tuple[str, str | None]]:
    """(module, name) of every import anywhere in ``tree`` (name None for ``import module``)."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.extend((node.module, alias.name) for alias in node.names)
    return found


def test_no_benchmark_edits_sys_path() -> None:
    for name, tree in _trees().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "path":
                assert not (isinstance(node.value, ast.Name) and node.value.id == "sys"), name


def test_no_benchmark_imports_tests_or_a_private_name_of_remem() -> None:
    for name, tree in _trees().items():
        for module, imported in _imported(tree):
            assert module.split(".")[0] != "tests", (name, module)
            if module.split(".")[0] == "remem":
                parts = [*module.split("."), *([imported] if imported else [])]
                assert not any(part.startswith("_") for part in parts), (name, module, imported)


def _remem_modules(tree: ast.Module) -> set[str]:
    """The names ``tree`` binds to remem or something imported from it."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named = [alias for alias in node.names if alias.name.startswith("remem")]
            bound.update(alias.asname or alias.name.split(".")[0] for alias in named)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("remem"):
            bound.update(alias.asname or alias.name for alias in node.names)
    return bound


def test_no_benchmark_reads_a_private_name_of_a_remem_module() -> None:
    """``ranking._cosine_top`` as well as ``from remem.core.ranking import _cosine_top``."""
    for name, tree in _trees().items():
        modules = _remem_modules(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                private = node.attr.startswith("_") and not node.attr.startswith("__")
                assert not (private and node.value.id in modules), (name, node.value.id, node.attr)


def test_no_benchmark_imports_another_back() -> None:
    trees = _trees()
    graph = {
        name: {module for module, _ in _imported(tree) if module in trees and module != name}
        for name, tree in trees.items()
    }
    assert not import_circles(graph), import_circles(graph)
