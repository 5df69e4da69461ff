"""The CLI registers only the invoked command's module with Typer; the map of commands to modules
must cover every command, and help must list them in one order whatever ran before."""

from __future__ import annotations

import importlib

import pytest
import typer

from remem import cli


def _names(app: typer.Typer) -> set[str]:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    return set(group.commands)


@pytest.mark.parametrize("module", sorted(cli.COMMANDS))
def test_each_module_registers_exactly_the_commands_mapped_to_it(module: str) -> None:
    app = typer.Typer()
    app.callback()(lambda: None)  # a group, even with one command
    importlib.import_module(f"remem.commands.{module}").register(app)
    assert _names(app) == set(cli.COMMANDS[module])


def test_registering_for_no_command_puts_every_command_on_the_app() -> None:
    cli.register_commands([])
    assert _names(cli.app) == {name for names in cli.COMMANDS.values() for name in names}


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["list"], "list"),
        (["-q", "search", "x"], "search"),
        (["--model-dir", "/m", "add", "text"], "add"),
        (["--model-dir=/m", "--quiet", "model", "list"], "model"),
        (["--model", "multilingual-e5-small", "add", "text"], "add"),
        (["--model=multilingual-e5-small", "search", "x"], "search"),
        (["--help"], None),
        ([], None),
        (["--bogus", "list"], None),
        (["lsit"], "lsit"),
    ],
)
def test_the_command_is_the_first_word_after_the_root_options(argv: list[str], expected: str | None) -> None:
    assert cli._command_name(argv) == expected


def test_help_lists_the_commands_in_one_order_whatever_ran_before(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["search", "--help"], ["model", "--help"], ["--help"]):
        assert cli.main(argv) == 0
    lines = capsys.readouterr().out.split("Commands:")[-1].splitlines()
    listed = [line.split()[0] for line in lines if line.startswith("  ") and not line.startswith("   ")]
    groups = ("model", "token")  # groups of commands come last, in their order
    assert listed == [name for name in cli._ORDER if name not in groups] + list(groups)


def test_help_lists_the_groups_in_their_order_when_the_second_ran_first(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A process that ran `token` before `model` (a server's, or a test worker's) still lists model
    first: the groups are ordered as the commands are, not by when each was registered."""
    cli.register_commands([])
    monkeypatch.setattr(cli.app, "registered_groups", list(reversed(cli.app.registered_groups)))
    assert cli.main(["--help"]) == 0
    lines = capsys.readouterr().out.split("Commands:")[-1].splitlines()
    assert [line.split()[0] for line in lines if line.startswith("  ")][-2:] == ["model", "token"]


def test_the_root_options_the_command_name_skips_are_the_apps() -> None:
    group = typer.main.get_command(cli.app)
    declared = {name for param in group.params for name in param.opts}
    completion = {"--install-completion", "--show-completion"}
    assert declared == (cli._ROOT_FLAGS | set(cli._ROOT_OPTIONS) | completion) - {"-h", "--help"}
    assert set(group.context_settings["help_option_names"]) == {"-h", "--help"}
