"""The Typer patch (``remem.commands.params``) against the Typer installed: it must install itself
(it reaches into Typer's private ``_TyperParameter`` and ``_coercion``; pyproject.toml pins the Typer
versions this was tested with), and it must coerce every value of every remem parameter exactly as
Typer's own pydantic adapter does — or fail the same way."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import version
from typing import Any

import pytest
import typer
import typer.main
from typer import _click, core
from typer._coercion import build_runtime_param

from remem.cli import app, register_commands
from remem.commands import params

#: What a command line (or a default) can hand a parameter: text of every shape remem's options
#: take or refuse (non-ASCII digits, bounds, enum values and near misses), lists and numbers.
VALUES: list[Any] = [
    None, "", "0", "1", "3", "-2", "+7", "007", "1.5", "-0.5", "1e3", "inf", "nan", "abc", "٣", "10",
    "100001", "10000001", "2", "-1", " 5", "hnsw", "exact", "auto", "flat", "HNSW", "json", "csv",
    "md", "keyword", "vector", "hybrid", "all-minilm-l6-v2", "2026-01-01", "x=y", 3, 0, -1, 2.5, True,
    ("a", "b"), ["a"], [], ("x",), ("1", "2"),
]  # fmt: skip


def _parameters() -> Iterator[tuple[str, Any, Any]]:
    """(command path, click command, parameter) for every Typer parameter of every remem command."""
    register_commands([])
    root = typer.main.get_command(app)

    def walk(command: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
        for param in command.params:
            if isinstance(param, core._TyperParameter):
                yield path, command, param
        if hasattr(command, "list_commands"):
            context = _click.Context(command)
            for name in command.list_commands(context):
                yield from walk(command.get_command(context, name), f"{path} {name}")

    yield from walk(root, "remem")


def _outcome(runtime: Any, value: Any, param: Any, ctx: Any) -> tuple[str, Any]:
    """What coercing ``value`` gives: ("value", its repr and type) or ("error", the message)."""
    try:
        coerced = runtime.coerce(value, param=param, ctx=ctx)
    except typer.BadParameter as error:
        return "error", error.format_message()
    return "value", (repr(coerced), type(coerced))  # repr: NaN is NaN


def test_the_patch_installs_itself_on_this_typer() -> None:
    assert params.install(), f"the Typer patch no longer fits Typer {version('typer')} (see params.py)"
    assert core._TyperParameter.get_runtime_param.__module__ == "remem.commands.params"


def test_every_parameter_of_every_command_is_covered() -> None:
    names = {(path, param.name) for path, _, param in _parameters()}
    assert ("remem list", "limit") in names and ("remem model pull", "name") in names, sorted(names)
    assert len(names) > 100


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_patch_coerces_every_value_as_typers_own_adapter_does() -> None:
    assert params.install()
    compared = 0
    for path, command, param in _parameters():
        if param.type_descriptor.file_annotation is not None:
            continue  # the patch hands files to Typer untouched; opening one here would write it
        ctx = _click.Context(command)
        own = build_runtime_param(param.type_descriptor)
        for value in VALUES:
            patched = _outcome(param.get_runtime_param(), value, param, ctx)
            assert patched == _outcome(own, value, param, ctx), (path, param.name, value)
            compared += 1
    assert compared > 1000
