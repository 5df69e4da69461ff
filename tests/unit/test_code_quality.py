"""The ground rules that tools can check: small modules, and what each layer may import (ruff and
mypy --strict run beside pytest, in `.ci/run`)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "remem"


def test_modules_stay_small() -> None:
    """A soft limit near 500 lines: modules are grouped by concept, not cut to a size."""
    sizes = {path.relative_to(ROOT): len(path.read_text().splitlines()) for path in SOURCE.rglob("*.py")}
    assert sizes and max(sizes.values()) <= 500, sorted(sizes.items(), key=lambda kv: -kv[1])[:3]


#: What the CLI's commands may import: the public API and the front-end's own helpers. Never the
#: core, the back-ends or the embedders directly (checked on the import statements of the source).
COMMAND_IMPORTS = {
    "remem",
    "remem.errors",
    "remem.render",
    "remem.exports",
    "remem.inputs",
    "remem.ingest",
    "remem.atomic",
    "remem.portable",  # what differs between systems (serve's open-files limit)
    "remem.mcp",
}


def _remem_imports(path: Path) -> set[str]:
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "remem":
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == "remem")
    return found


def test_commands_import_only_the_public_api() -> None:
    for path in sorted((SOURCE / "commands").glob("*.py")):
        wrong = {
            m for m in _remem_imports(path) if m not in COMMAND_IMPORTS and not m.startswith("remem.commands")
        }
        assert not wrong, f"{path.name} imports {sorted(wrong)}"


def test_the_mcp_server_imports_only_the_public_api() -> None:
    """remem.mcp is a front-end like the commands: the public API, render and the input helpers."""
    paths = sorted((SOURCE / "mcp").glob("*.py"))
    assert paths
    for path in paths:
        wrong = {
            m
            for m in _remem_imports(path)
            if m not in COMMAND_IMPORTS and not m.startswith(("remem.mcp", "remem.web"))
        }
        assert not wrong, f"mcp/{path.name} imports {sorted(wrong)}"


def test_the_page_imports_only_the_public_api_and_the_mcp_service() -> None:
    """remem.web is a front-end beside the MCP server: the public API and remem.mcp's service layer
    (the same pin and functions as the tools), nothing below."""
    paths = sorted((SOURCE / "web").glob("*.py"))
    assert paths
    for path in paths:
        wrong = {
            m
            for m in _remem_imports(path)
            if m not in COMMAND_IMPORTS and not m.startswith(("remem.web", "remem.mcp"))
        }
        assert not wrong, f"web/{path.name} imports {sorted(wrong)}"


def test_imports_point_down() -> None:
    """The core never imports a front-end; back-ends and embedders never import each other, the
    core or a front-end; the local and PostgreSQL back-ends never import each other."""
    front = ("remem.cli", "remem.commands", "remem.render", "remem.mcp", "remem.web")
    rules = {
        "core": front,
        "backends": (*front, "remem.core", "remem.embedders"),
        "embedders": (*front, "remem.core", "remem.backends"),
    }
    rules["backends/local"] = (*rules["backends"], "remem.backends.postgres")
    rules["backends/postgres"] = (*rules["backends"], "remem.backends.local")
    for folder, forbidden in rules.items():
        for path in sorted((SOURCE / folder).rglob("*.py")):
            wrong = {m for m in _remem_imports(path) if m.startswith(forbidden) or m == "remem"}
            assert not wrong, f"{folder}/{path.name} imports {sorted(wrong)}"
