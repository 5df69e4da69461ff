"""A PostgreSQL store URL means what psql means by it: every form libpq takes (no host, a service,
``PGHOST``), a password with any characters (raw or %-encoded) that never shows in a message, the
URL's ``connect_timeout``, and schema names folded to lower case as PostgreSQL folds them."""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest

import postgres_server
import remem
from helpers import run_cli
from remem.backends.postgres.connecting import connect
from remem.backends.postgres.urls import parse
from remem.errors import InvalidInputError, StoreNotFoundError
from remem.testing import FakeEmbedder


def _socket_dir(base: str) -> str:
    return parse_qs(urlsplit(base).query)["host"][0]


def _schema(url: str) -> str:
    return parse_qs(urlsplit(url).query)["schema"][0]


def _open(url: str, create: bool = True) -> remem.Memories:
    return remem.open(url, create=create, embedder=FakeEmbedder(), environ={})


def test_urls_without_a_host_are_completed_by_libpq(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    socket, schema = _socket_dir(postgres_url), _schema(postgres_url)
    with _open(postgres_url) as memories:
        memories.add("kept on the server")
    service_file = tmp_path / "pg_service.conf"
    service_file.write_text(f"[team]\nhost={socket}\ndbname=postgres\nuser=postgres\n")
    monkeypatch.setenv("PGSERVICEFILE", str(service_file))  # read by libpq, not by remem
    monkeypatch.setenv("PGUSER", "postgres")
    forms = [
        f"postgresql:///postgres?host={socket}&schema={schema}",
        f"postgresql://?service=team&schema={schema}",
        f"postgresql://postgres@/postgres?host={quote(socket, safe='')}&schema={schema}",
        f"postgresql://{quote(socket, safe='')}/postgres?user=postgres&schema={schema}",
    ]
    for url in forms:
        with _open(url, create=False) as memories:
            assert [m.text for m in memories.list()] == ["kept on the server"], url
    monkeypatch.setenv("PGHOST", socket)
    with _open(f"postgresql:///postgres?schema={schema}", create=False) as memories:
        assert memories.location == f"postgresql:///postgres?schema={schema}"
        assert len(memories.list()) == 1


@pytest.mark.parametrize("password", ["o", "stro@ngRaw55", "a:b/c@d%?x#y/", "e%41t"])
def test_a_password_is_read_whole_and_never_shown(postgres_base: str, password: str) -> None:
    postgres_server.password_role("erin", password)
    socket = _socket_dir(postgres_base)
    for written in {password, quote(password, safe="")} - {"e%41t"}:  # %41 as written means "A"
        url = f"postgresql://erin:{written}@/postgres?host={socket}&schema=nothing_here"
        with pytest.raises(StoreNotFoundError) as found:  # connected: the store is all that is missing
            _open(url, create=False)
        assert (
            str(found.value)
            == f"no remem store at postgresql://erin@/postgres?host={socket}&schema=nothing_here"
        )
    for url in (
        f"postgresql://erin:{quote(password + 'x', safe='')}@/postgres?host={socket}",  # wrong password
        f"postgresql://erin:{password}@/postgres?host={socket}/nowhere",  # no server there
    ):
        outcome = run_cli(["list"], url)  # type: ignore[arg-type]
        assert outcome.code == 2, outcome.stderr
        line = outcome.stderr.strip()
        assert (
            line.startswith("Error: cannot connect to postgresql://erin@/postgres?host=") and "\n" not in line
        )
        assert "***" not in line and "connection" in line  # nothing masked: the password never got there
        assert password == "o" or password.rsplit("@", 1)[-1] not in line


def test_the_urls_connect_timeout_and_options_are_kept(postgres_url: str) -> None:
    def timeout(url: str) -> str:
        with connect(parse(url)) as conn:
            return str(conn.info.get_parameters()["connect_timeout"])

    assert timeout(postgres_url) == "10"
    assert timeout(postgres_url + "&connect_timeout=3") == "3"
    with connect(parse(postgres_url + "&options=-c%20lock_timeout%3D1234")) as conn:  # %20: a space
        assert conn.execute("SHOW lock_timeout").fetchone() == ("1234ms",)
    with pytest.raises(
        InvalidInputError, match=r"connect_timeout='soon' .* is not a whole number of seconds"
    ):
        _open(postgres_url + "&connect_timeout=soon")


def test_a_schema_name_is_folded_as_postgresql_folds_it(postgres_base: str, tmp_path: Path) -> None:
    name = "Team_" + hashlib.sha1(str(tmp_path).encode()).hexdigest()[:8]  # a store of this test's own
    with _open(f"{postgres_base}&schema={name}") as memories:
        memories.add("one store, however the name is written")
        assert memories.location.endswith(f"schema={name.lower()}")
    with _open(f"{postgres_base}&schema={name.lower()}", create=False) as memories:
        assert len(memories.list()) == 1
    with _open(f'{postgres_base}&schema="{name}"') as memories:  # quoted: the name as written
        assert memories.list() == [] and memories.location.endswith(f'schema="{name}"')
        memories.add("another store")
    postgres_server.psql(f"DROP SCHEMA {name.lower()} CASCADE")
    with pytest.raises(InvalidInputError, match=f'the store in schema "{name}" is schema="{name}"'):
        _open(f"{postgres_base}&schema={name}")  # which one is meant? refused, nothing made
    assert name.lower() not in postgres_server.psql("SELECT nspname FROM pg_namespace")


@pytest.mark.parametrize("schema", ["information_schema", "pg_catalog", "PG_TOAST", "pg_remem"])
def test_postgresqls_own_schemas_are_refused_in_one_line(postgres_base: str, schema: str) -> None:
    outcome = run_cli(["add", "never stored"], f"{postgres_base}&schema={schema}")  # type: ignore[arg-type]
    assert outcome.code == 2
    line = outcome.stderr.strip()
    assert line.startswith(f"Error: schema {schema.lower()} in postgresql://postgres@/postgres?host=")
    assert line.endswith("is PostgreSQL's own: choose another ?schema=") and "\n" not in line
