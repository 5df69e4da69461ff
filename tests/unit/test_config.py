"""Store directory resolution and the debug switch."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from remem.config import HOME_ENV, debug_enabled, default_store_dir, resolve_store_dir


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    fake_home = tmp_path / "home"
    fake_home.mkdir()
    monkeypatch.setenv("HOME", str(fake_home))
    return fake_home


def test_option_beats_environment(tmp_path: Path) -> None:
    chosen = resolve_store_dir(tmp_path / "opt", {HOME_ENV: str(tmp_path / "env")})
    assert chosen == tmp_path / "opt"


def test_environment_beats_default(tmp_path: Path) -> None:
    assert resolve_store_dir(None, {HOME_ENV: str(tmp_path / "env")}) == tmp_path / "env"


def test_environment_value_is_stripped(tmp_path: Path) -> None:
    assert resolve_store_dir(None, {HOME_ENV: f"  {tmp_path / 'env'}\n"}) == tmp_path / "env"


@pytest.mark.parametrize("environ", [{}, {HOME_ENV: ""}, {HOME_ENV: "   "}, {"OTHER": "/x"}])
def test_default_when_no_option_or_environment(environ: dict[str, str]) -> None:
    expected = Path(platformdirs.user_data_dir("remem", appauthor=False)).absolute()
    assert resolve_store_dir(None, environ) == expected
    assert default_store_dir() == Path(platformdirs.user_data_dir("remem", appauthor=False))
    assert expected.name == "remem"


def test_tilde_is_expanded_in_option_and_environment(home: Path) -> None:
    assert resolve_store_dir(Path("~/opt-store"), {}) == home / "opt-store"
    assert resolve_store_dir(None, {HOME_ENV: "~/env-store"}) == home / "env-store"


def test_result_is_absolute(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    from_option = resolve_store_dir(Path("rel/store"), {})
    from_env = resolve_store_dir(None, {HOME_ENV: "rel-env"})
    assert from_option.is_absolute() and from_env.is_absolute()
    assert from_option == tmp_path / "rel" / "store"
    assert from_env == tmp_path / "rel-env"


def test_resolve_does_not_create_anything(tmp_path: Path) -> None:
    resolve_store_dir(tmp_path / "not-made", {})
    assert not (tmp_path / "not-made").exists()


@pytest.mark.parametrize("value", ["1", "TRUE", " yes ", "on"])
def test_debug_enabled_true(value: str) -> None:
    assert debug_enabled({"REMEM_DEBUG": value}) is True


@pytest.mark.parametrize("environ", [{}, {"REMEM_DEBUG": ""}, {"REMEM_DEBUG": "0"}, {"REMEM_DEBUG": "no"}])
def test_debug_enabled_false(environ: dict[str, str]) -> None:
    assert debug_enabled(environ) is False
