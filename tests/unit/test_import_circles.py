"""No import circles in remem: no module imports, even only for type checking or inside a function,
a module that imports it back (directly or through others)."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import import_circles

SOURCE = Path(__file__).resolve().parents[2] / "src" / "remem"


def _modules() -> dict[str, Path]:
    """Every module of remem by dotted name (a package by its own name)."""
    found = {}
    for path in SOURCE.rglob("*.py"):
        parts = path.relative_to(SOURCE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The remem modules ``path`` imports anywhere in it (``from pkg import sub`` names ``pkg.sub``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module in modules:
            for alias in node.names:
                found.add(
                    f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                )
    return found


def test_no_module_imports_itself_back() -> None:
    modules = _modules()
    graph = {name: _imports(path, modules) - {name} for name, path in modules.items()}
    assert len(graph) > 50 and graph["remem.types"]  # the source was read
    assert not import_circles(graph), import_circles(graph)


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert import_circles(graph) == [["a", "b", "c"]]
