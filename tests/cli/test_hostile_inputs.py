"""Inputs that used to reach the user as ``Error: unexpected <Exception>`` (issue 15 #16), strict
JSON output (#11) and one rule for naive times (#19): each is a bad line in a batch, one clear
error line elsewhere, and a damaged database is reported — never with a memory's text."""

from __future__ import annotations

import json
import math
import random
import shutil
import sqlite3
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

import helpers
import remem
from helpers import run_cli
from remem.backends.local.files import DB_FILE
from remem.embedders.base import Embeddings
from remem.errors import InvalidInputError, StoreCorruptError
from remem.testing import FakeEmbedder


@pytest.fixture
def two(store_dir: Path) -> Path:
    assert run_cli(["add", "the kitchen sink leaks"], store_dir).code == 0
    assert run_cli(["add", "--tag", "t0", "the garden gate squeaks"], store_dir).code == 0
    return store_dir


def _one_error(stderr: str, expected: str) -> None:
    errors = [line for line in stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and expected in errors[0], stderr
    assert "unexpected" not in stderr


BAD_LINES = [
    ('{"text": "a", "n": %s}' % ("1" * 5000), "invalid JSON (a number too long to read)"),
    ("[" * 100_000, "invalid JSON (nested too deeply)"),
    (
        '{"text": "a", "created_at": "9999-12-31T23:59:59-05:00"}',
        "created_at '9999-12-31T23:59:59-05:00' is out of range",
    ),
    (
        '{"text": "a", "created_at": "0001-01-01T00:00:00+05:00"}',
        "created_at '0001-01-01T00:00:00+05:00' is out of range (years 1 to 9999 in UTC)",
    ),
    ('{"text": "a\\ud800b"}', "the text is not valid Unicode"),
    ('{"text": "a", "user": "x\\udfffy"}', "user is not valid Unicode"),
    ('{"text": "a", "tags": ["\\ud800"]}', "a tag is not valid Unicode"),
    ('{"text": "a", "meta": {"k\\ud800": "v"}}', "a meta key is not valid Unicode"),
    ('{"text": "a", "meta": {"k": "\\udc80"}}', "a meta value is not valid Unicode"),
]


@pytest.mark.parametrize("command", ["add --jsonl", "import"])
@pytest.mark.parametrize(("line", "message"), BAD_LINES)
def test_hostile_json_lines_are_bad_lines_with_their_number(
    store_dir: Path, command: str, line: str, message: str
) -> None:
    data = '{"text": "a fine first line"}\n' + line + "\n"
    refused = run_cli([*command.split(), "-"], store_dir, stdin=data)
    assert refused.code == 2
    _one_error(refused.stderr, f"line 2: {message}")
    skipped = run_cli([*command.split(), "-", "--skip-invalid", "--json"], store_dir, stdin=data)
    assert skipped.code == 0 and "unexpected" not in skipped.stderr
    assert json.loads(skipped.stdout)["skipped_lines"] == [2]


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
    _one_error(result.stderr, message)
    assert run_cli(["export"], two).stdout == before


def test_an_undecodable_argument_creates_no_store(tmp_path: Path) -> None:
    store = tmp_path / "new"
    result = run_cli(["add", "a\udcffb"], store)
    assert result.code == 2 and not store.exists()
    _one_error(result.stderr, "argument 2 is not valid Unicode")


def test_since_year_one_works_in_every_time_zone(two: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        result = run_cli(["list", "--since", "0001-01-01"], two)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert result.code == 0 and len(result.stdout.splitlines()) == 3


@pytest.mark.parametrize("big", [2**63, 2**63 - 1, 2**64, 10**30])
@pytest.mark.parametrize("command", [["show"], ["forget"], ["edit", "{}", "new text"], ["forget", "1"]])
def test_ids_beyond_sqlite_name_no_memory(two: Path, big: int, command: list[str]) -> None:
    args = [part.format(big) for part in command] if "{}" in command else [*command, str(big)]
    result = run_cli(args, two)
    if command == ["forget", "1"]:  # one id exists: the other is a warning, the one is forgotten
        assert result.code == 0 and f"there is no memory {big}" in result.stderr
    else:
        assert result.code == 1
        _one_error(result.stderr, f"there is no memory {big}")


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


def _damaged_copies(store: Path, tmp_path: Path, count: int) -> list[Path]:
    size = (store / DB_FILE).stat().st_size
    copies = []
    for trial in range(count):
        copy = tmp_path / f"damaged{trial}"
        shutil.copytree(store, copy)
        rnd = random.Random(trial)
        with open(copy / DB_FILE, "r+b") as handle:
            handle.seek(rnd.randrange(4096, size - 600))
            handle.write(bytes(rnd.randrange(256) for _ in range(rnd.choice([8, 64, 512]))))
        copies.append(copy)
    return copies


def test_a_damaged_database_is_reported_without_memory_text(store_dir: Path, tmp_path: Path) -> None:
    lines = "".join(
        json.dumps({"text": f"secret number {i} " + "word " * (i % 50), "meta": {"k": str(i)}}) + "\n"
        for i in range(300)
    )
    assert run_cli(["add", "--jsonl", "-"], store_dir, stdin=lines).code == 0
    commands = [
        ["list", "-k", "1000"],
        ["search", "secret number"],
        ["search", "--mode", "keyword", "word"],
        ["show", "5"],
        ["stats"],
        ["export"],
        ["context", "number"],
        ["add", "one more"],
        ["forget", "3"],
        ["reindex", "--force"],
    ]
    for copy in _damaged_copies(store_dir, tmp_path, 12):
        for command in commands:
            result = run_cli(command, copy)
            assert result.code in (0, 1, 2), (command, result)
            assert "unexpected" not in result.stderr and "secret" not in result.stderr, (
                command,
                result.stderr,
            )
            assert result.stderr.count("Error:") <= 1
        doctor = run_cli(["doctor"], copy)
        assert doctor.code in (0, 2) and "Error:" not in doctor.stderr, doctor.stderr


def test_text_that_is_not_utf8_in_the_database_is_damage_not_quoted(store_dir: Path) -> None:
    assert run_cli(["add", "a secret that gets damaged"], store_dir).code == 0
    with sqlite3.connect(store_dir / DB_FILE) as conn:
        conn.execute("UPDATE memories SET text = CAST(? AS TEXT) WHERE id = 1", (b"a secret \xff\xfe",))
    for command in (["list"], ["show", "1"], ["export"]):
        result = run_cli(command, store_dir)
        assert result.code == 2 and "secret" not in result.stderr
        _one_error(result.stderr, "is damaged (a stored value is not valid text)")


def test_doctor_reports_a_damaged_database_instead_of_failing(store_dir: Path) -> None:
    assert run_cli(["add", "hello"], store_dir).code == 0
    with sqlite3.connect(store_dir / DB_FILE) as conn:
        conn.execute("UPDATE memories SET meta = 'not json' WHERE id = 1")
        conn.execute("UPDATE store_meta SET value = 'x' WHERE key = 'model_dim'")
    result = run_cli(["doctor"], store_dir)
    assert result.code == 2 and "Error:" not in result.stderr
    assert all(len(line.split()) >= 2 for line in result.stdout.splitlines())


def test_the_library_raises_its_own_errors_for_damage(store_dir: Path) -> None:
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        memories.add("hello there")
    with sqlite3.connect(store_dir / DB_FILE) as conn:
        conn.execute("UPDATE memories SET meta = '{broken' WHERE id = 1")
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        with pytest.raises(StoreCorruptError, match="damaged"):
            memories.list()
        with pytest.raises(StoreCorruptError, match="damaged"):
            list(memories.iter())
        with pytest.raises(InvalidInputError, match="not valid Unicode"):
            memories.add("bad \ud800 text")
        assert memories.get_many([2**63, -1, 0]) == {}


def test_an_unexpected_exception_never_shows_its_message(two: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise ValueError("the secret text of a memory")

    monkeypatch.setattr(remem.Memories, "list", boom)
    result = run_cli(["list"], two)
    assert result.code == 2 and "secret" not in result.stderr
    assert result.stderr == "Error: unexpected ValueError (set REMEM_DEBUG=1 for a traceback)\n"


# --- #11: strict JSON -----------------------------------------------------------------------------


def _strict(line: str) -> object:
    def refuse(constant: str) -> object:
        raise ValueError(f"bare {constant} in JSON output")

    return json.loads(line, parse_constant=refuse)


class _NanQueries(FakeEmbedder):
    """A model whose query vectors are NaN (a broken custom model): every cosine is NaN."""

    def embed_queries(self, texts: Sequence[str]) -> Embeddings:
        found = super().embed_queries(texts)
        return Embeddings(np.full_like(found.vectors, np.nan), found.dropped_tokens)


def test_a_nan_score_never_reaches_json_output_as_bare_nan(
    two: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(helpers.CLI, "embedder", _NanQueries())
    for args in (["search", "--json", "sink"], ["search", "--json", "--mode", "vector", "sink"]):
        result = run_cli(args, two)
        assert result.code in (0, 1) and "unexpected" not in result.stderr
        records = [_strict(line) for line in result.stdout.splitlines()]
        assert all(isinstance(r, dict) for r in records)
    context = run_cli(["context", "--json", "sink"], two)
    assert all(_strict(line) for line in context.stdout.splitlines())


def test_json_lines_are_strict() -> None:
    from remem import render

    line = render.json_line({"score": math.nan, "lanes": {"vector": {"score": math.inf}}, "x": [-math.inf]})
    assert _strict(line) == {"score": None, "lanes": {"vector": {"score": None}}, "x": [None]}


# --- #19: naive times are UTC ---------------------------------------------------------------------


@pytest.mark.parametrize("zone", ["Asia/Tokyo", "America/Los_Angeles"])
def test_a_naive_since_is_utc_like_a_naive_created_at(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch, zone: str
) -> None:
    import time

    lines = (
        '{"text": "before noon", "created_at": "2026-01-01T11:59"}\n'
        '{"text": "at noon", "created_at": "2026-01-01T12:00"}\n'
    )
    assert run_cli(["add", "--jsonl", "-"], store_dir, stdin=lines).code == 0
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        since = run_cli(["list", "--json", "--since", "2026-01-01T12:00"], store_dir)
        until = run_cli(["list", "--json", "--until", "2026-01-01T12:00"], store_dir)
        shown = run_cli(["list"], store_dir).stdout
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert [json.loads(line)["text"] for line in since.stdout.splitlines()] == ["at noon"]
    assert [json.loads(line)["text"] for line in until.stdout.splitlines()] == ["before noon"]
    assert "2026-01-01 12:00" in shown  # what list shows is what --since takes


def test_a_naive_datetime_filter_is_utc_in_the_api(store_dir: Path) -> None:
    with remem.open(store_dir, embedder=FakeEmbedder()) as memories:
        memories.add("x", created_at=datetime(2026, 1, 1, 12, 0))
        assert memories.get(1).created_at == "2026-01-01T12:00:00.000Z"
        assert len(memories.list(since=datetime(2026, 1, 1, 12, 0))) == 1
        assert memories.list(since=datetime(2026, 1, 1, 12, 0, 1)) == []
        aware = datetime(2026, 1, 1, 21, 0, tzinfo=timezone(timedelta(hours=9)))
        assert len(memories.list(since=aware)) == 1
