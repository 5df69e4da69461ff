"""Arguments at and past their limits (issue 15 #16): out-of-range times, undecodable bytes, ids and
limits beyond SQLite's integers and thousands of filters are one clear error line (or simply
work), never ``Error: unexpected <Exception>``, and change nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import one_error, run_cli


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["list", "--since", "99999999999999d"], "--since '99999999999999d' reaches back before the year 1"),
        (["list", "--since", "9" * 5000 + "d"], "is neither an ISO date/time"),
        (["list", "--since", "0001-01-01T00:00+05:00"], "is out of range (years 1 to 9999 in UTC)"),
        (["list", "--until", "9999-12-31T23:00-05:00"], "is out of range (years 1 to 9999 in UTC)"),
        (["search", "--since", "1000000000w", "sink"], "reaches back before the year 1"),
        (["export", "--since", "99999999999999d"], "reaches back before the year 1"),
        (["add", "caf\udce9 latin-1 bytes in an argument"], "argument 2 is not valid Unicode"),
        (["search", "\ud800"], "argument 2 is not valid Unicode"),
        (["list", "--user", "a\udcff"], "is not valid Unicode"),
        (["add", "--meta", "k\udcff=v", "text"], "is not valid Unicode"),
    ],
)
def test_out_of_range_and_undecodable_arguments_are_one_error_line(
    two: Path, args: list[str], message: str
) -> None:
    before = run_cli(["export"], two).stdout
    result = run_cli(args, two)
    assert result.code == 2 and result.stdout == ""
    one_error(result.stderr, message)
    assert run_cli(["export"], two).stdout == before


def test_an_undecodable_argument_creates_no_store(tmp_path: Path) -> None:
    store = tmp_path / "new"
    result = run_cli(["add", "a\udcffb"], store)
    assert result.code == 2 and not store.exists()
    one_error(result.stderr, "argument 2 is not valid Unicode")


@pytest.mark.parametrize("big", [2**63, 2**63 - 1, 2**64, 10**30])
@pytest.mark.parametrize("command", [["show"], ["forget"], ["edit", "{}", "new text"], ["forget", "1"]])
def test_ids_beyond_sqlite_name_no_memory(two: Path, big: int, command: list[str]) -> None:
    args = [part.format(big) for part in command] if "{}" in command else [*command, str(big)]
    result = run_cli(args, two)
    if command == ["forget", "1"]:  # one id exists: the other is a warning, the one is forgotten
        assert result.code == 0 and f"there is no memory {big}" in result.stderr
    else:
        assert result.code == 1
        one_error(result.stderr, f"there is no memory {big}")


@pytest.mark.parametrize(
    "args",
    [
        ["search", "-k", str(2**63), "sink"],
        ["search", "--mode", "keyword", "-k", str(2**70), "sink"],
        ["list", "-k", str(2**63)],
        ["context", "--recent", str(2**63), "--similar", str(2**64), "sink"],
    ],
)
def test_limits_beyond_sqlite_ask_for_everything(two: Path, args: list[str]) -> None:
    result = run_cli(args, two)
    assert result.code == 0 and "sink" in result.stdout and result.stderr == ""


@pytest.mark.parametrize("option", ["--tag", "--meta"])
def test_a_thousand_filters_are_no_error(two: Path, option: str) -> None:
    values = [f"t{i}" if option == "--tag" else f"k{i}=v" for i in range(1500)]
    many = [part for value in values for part in (option, value)]
    for command in (["list"], ["search", "sink"], ["export"], ["forget", "--where"]):
        result = run_cli([*command, *many], two)
        assert result.code in (0, 1) and "Error" not in result.stderr, (command, result.stderr)
    assert len(run_cli(["list"], two).stdout.splitlines()) == 3


def test_several_tag_and_meta_filters_still_select_exactly(store_dir: Path) -> None:
    run_cli(["add", "-t", "a", "-t", "b", "-m", "k=1", "-m", "j=2", "one"], store_dir)
    run_cli(["add", "-t", "a", "-m", "k=1", "two"], store_dir)
    run_cli(["add", "-t", "b", "-m", "k=2", "-m", "j=2", "three"], store_dir)

    def texts(*args: str) -> set[str]:
        out = run_cli(["list", "--json", *args], store_dir).stdout
        return {json.loads(line)["text"] for line in out.splitlines()}

    assert texts("-t", "a", "-t", "b") == {"one"}
    assert texts("-t", "a") == {"one", "two"}
    assert texts("-m", "k=1", "-m", "j=2") == {"one"}
    assert texts("-m", "j=2") == {"one", "three"}
    assert texts("-m", "k=1", "-t", "b") == {"one"}
