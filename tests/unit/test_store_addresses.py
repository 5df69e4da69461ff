"""What a store string names (issue 46, finding 9d): a PostgreSQL URL, a directory — and a string
that starts as a PostgreSQL URL but is none (``postgresql:relative``, ``postgres:/x``) is a one-line
error saying what a PostgreSQL URL looks like, never a local store made under that name."""

from __future__ import annotations

from pathlib import Path

import pytest

import remem
from helpers import run_cli
from remem.config import resolve_store
from remem.errors import InvalidInputError
from remem.testing import FakeEmbedder

NOT_URLS = ["postgresql:relative", "postgres:/x", " POSTGRES:x", "postgresql:/u:s3cret@h/db", "postgres:"]


@pytest.mark.parametrize("store", NOT_URLS)
def test_a_url_looking_store_that_is_no_url_is_refused(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInputError) as refused:
        remem.open(store, embedder=FakeEmbedder(), create=True)
    message = str(refused.value)
    assert "is not a PostgreSQL URL: one looks like postgresql://" in message and "\n" not in message
    assert "s3cr" not in message
    assert list(tmp_path.iterdir()) == []  # nothing made


def test_the_cli_refuses_it_in_one_line_and_makes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    outcome = run_cli(["add", "a memory", "--store", "postgres:/x"])
    assert outcome.code != 0 and "is not a PostgreSQL URL" in outcome.stderr
    assert len(outcome.stderr.strip().splitlines()) == 1 and "Traceback" not in outcome.stderr
    assert list(tmp_path.iterdir()) == []


def test_real_urls_and_directories_still_name_their_stores(tmp_path: Path) -> None:
    assert resolve_store("postgresql://h/db", {}) == "postgresql://h/db"
    assert resolve_store(" postgres://h/db ", {}) == "postgres://h/db"
    assert resolve_store(Path("postgres:x"), {}) == Path("postgres:x").absolute()  # a Path is a directory
    assert resolve_store("./postgres:x", {}) == Path("postgres:x").absolute()
    assert resolve_store(str(tmp_path / "postgres:x"), {}) == tmp_path / "postgres:x"
    with pytest.raises(InvalidInputError):
        resolve_store(None, {"REMEM_HOME": "postgres:/x"})
