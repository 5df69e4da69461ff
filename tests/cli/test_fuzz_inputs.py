"""A property over the CLI's inputs (issue 15, "done means"): whatever the arguments and stdin, the
exit code is 0, 1 or 2, a failure is one ``Error:`` line, no message says ``unexpected``, and
``--json`` output is strict JSON. Commands that write files outside the store (``export -o``), reach
the network (``model pull``) or serve stdin (``mcp``) are left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import run_cli

COMMANDS = [
    "add", "search", "list", "show", "forget", "edit", "context", "export", "import", "stats", "doctor",
    "reindex",
]  # fmt: skip
OPTIONS = [
    "-k", "--limit", "--since", "--until", "--user", "-u", "--tag", "-t", "--meta", "-m", "-c", "-r",
    "--min-score", "--mode", "--json", "--recent", "--similar", "--merge", "--max-chars", "--format",
    "--dry-run", "--where", "--skip-invalid", "--lines", "--jsonl", "--with-vectors", "--repair", "--",
    "--index", "--hnsw-m", "--ef-search", "--ef-construction", "--force", "exact", "hnsw", "auto",
]  # fmt: skip
HOSTILE = [
    "", " ", "-", "-1", "0", "1", "2", "nan", "inf", "-inf", "1e309", "1.5", "-0.5",
    str(2**63), str(2**64), "9" * 30, "99999999999999d", "0001-01-01", "9999-12-31T23:59-05:00",
    "0001-01-01T00:00+05:00", "2026-11-29", "30m", "7d", "a=b", "=", "k=", '"q"=\\', "\ud800",
    "caf\udce9", "\x1b[2J", "\u202enimda", "\ufeff", "\u200b", "\x00", "a\nb", "\r", "vector",
    "keyword", "hybrid", "csv", "markdown", "jsonl", "interleave", "NEAR(a b)", '"', "*", "a OR b",
    "x" * 300,
]  # fmt: skip
STDIN = [
    b"", b"\xff\xfe", b"hello world\n", b'{"text": "a"}\n', b'{"text": "a", "n": ' + b"1" * 5000 + b"}\n",
    b"[" * 50_000, b'{"text": "\\ud800"}\n', b'{"text": "x", "created_at": "0001-01-01T00:00+05:00"}\n',
    b'{"text": "x", "id": 9223372036854775808}\n', b'{"text": NaN}\n', b"\x00\n",
]  # fmt: skip

tokens = st.one_of(
    st.sampled_from(OPTIONS), st.sampled_from(HOSTILE), st.text(max_size=12), st.integers().map(str)
)


def _strict(line: str) -> object:
    def refuse(constant: str) -> object:
        raise ValueError(f"bare {constant}")

    return json.loads(line, parse_constant=refuse)


@pytest.fixture(scope="module")
def fuzz_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "store"


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(command=st.sampled_from(COMMANDS), rest=st.lists(tokens, max_size=6), stdin=st.sampled_from(STDIN))
def test_any_input_gives_a_clean_outcome(
    fuzz_store: Path, command: str, rest: list[str], stdin: bytes
) -> None:
    if not fuzz_store.exists():
        assert run_cli(["add", "--tag", "seed", "the kitchen sink leaks"], fuzz_store).code == 0
    result = run_cli([command, *rest], fuzz_store, stdin=stdin)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert result.code in (0, 1, 2), result
    assert "unexpected" not in result.stderr and "Traceback" not in result.stderr, result.stderr
    if result.code == 2:
        assert len(errors) == 1, result.stderr
    else:
        assert len(errors) <= 1, result.stderr
    if "--json" in rest and "--" not in rest and result.code == 0:
        for line in result.stdout.splitlines():
            _strict(line)
