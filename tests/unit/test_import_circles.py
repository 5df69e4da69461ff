"""The layout follows the concepts: the modules of a back-end import each other in one direction
only — no circle, not even through an import made only for type checking or delayed into a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "src" / "remem"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The modules among ``modules`` that ``path`` imports anywhere (top level, under
    ``TYPE_CHECKING``, inside a function); ``from package import module`` counts as the module."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            named = {f"{node.module}.{alias.name}" for alias in node.names}
            found.update(named & modules or {node.module} & modules)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
    return found


def _circle(graph: dict[str, set[str]]) -> list[str]:
    """One circle of ``graph`` (module → what it imports), or [] when there is none."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str]:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return []
        for imported in sorted(graph[module]):
            if circle := visit(imported, [*path, module]):
                return circle
        done.add(module)
        return []

    for module in sorted(graph):
        if circle := visit(module, []):
            return circle
    return []


@pytest.mark.parametrize("folder", ["backends/local"])
def test_a_back_ends_modules_import_each_other_without_a_circle(folder: str) -> None:
    paths = sorted((SOURCE / folder).rglob("*.py"))
    assert paths
    modules = {_module_name(path) for path in paths}
    graph = {_module_name(path): _imports(path, modules) - {_module_name(path)} for path in paths}
    assert _circle(graph) == [], " -> ".join(_circle(graph))


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circle(graph) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) == []
