"""How a token is verified on a local store: one look-up by the presented secret's sha256 (the
unique index on the stored hash), whatever the number of tokens, and never a query holding the
secret itself (remem.core.tokens.Tokens.verify says why a look-up by the digest is safe)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

import remem
from remem import Memories
from remem.testing import FakeEmbedder


@pytest.fixture
def memories(tmp_path: Path) -> Iterator[Memories]:
    with remem.open(tmp_path / "store", embedder=FakeEmbedder()) as opened:
        yield opened


def _statements(memories: Memories, secret: str) -> list[str]:
    """The SQL statements (parameters bound) ``verify(secret)`` ran."""
    statements: list[str] = []
    conn = memories.backend.records.conn  # type: ignore[attr-defined]
    conn.set_trace_callback(statements.append)
    try:
        memories.tokens.verify(secret)
    finally:
        conn.set_trace_callback(None)
    return statements


def test_verify_reads_one_row_by_the_digest_of_the_presented_secret(memories: Memories) -> None:
    secrets = [memories.tokens.add(user=user)[0] for user in ("alice", "bob", "carol")]
    for presented in [secrets[1], secrets[1] + "x", "remem_wrong", ""]:
        digest = hashlib.sha256(presented.encode()).hexdigest()
        (statement,) = _statements(memories, presented)
        assert "WHERE hash = " in statement and digest in statement, statement
        assert not presented or presented not in statement
    conn = memories.backend.records.conn  # type: ignore[attr-defined]
    (plan,) = conn.execute("EXPLAIN QUERY PLAN SELECT name FROM tokens WHERE hash = ?", ("x",)).fetchall()
    assert "USING INDEX" in plan[-1] and "hash=?" in plan[-1], plan
