"""How a token is verified: the same work whatever is presented — the presented secret's sha256
compared with every stored hash by ``hmac.compare_digest``, none skipped once one matched, and no
query of the store that holds the presented value (a lookup by it would answer a right secret
sooner than a wrong one)."""

from __future__ import annotations

import hashlib
import hmac
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


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bytes, bytes]]:
    """Every call of hmac.compare_digest from now on (the real one still answers)."""
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", counting)
    return calls


def test_every_stored_hash_is_compared_whichever_matches_and_when_none_does(
    memories: Memories, compared: list[tuple[bytes, bytes]]
) -> None:
    secrets = [memories.tokens.add(user=user)[0] for user in ("alice", "bob", "carol")]
    stored = sorted(record.hash.encode() for record in memories.backend.token_records())
    for presented in [*secrets, secrets[0] + "x", "remem_wrong", "", "\ud800"]:
        compared.clear()
        found = memories.tokens.verify(presented)
        assert (found is not None) == (presented in secrets)
        assert len(compared) == 3, presented  # one per stored token, the first one matching or not
        digest = hashlib.sha256(presented.encode("utf-8", "surrogatepass")).hexdigest().encode()
        assert sorted(b for _, b in compared) == stored
        assert {a for a, _ in compared} == {digest}


def test_no_query_is_keyed_by_the_presented_secret(memories: Memories) -> None:
    secret, _ = memories.tokens.add(user="alice")
    statements: list[str] = []
    memories.backend.records.conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    try:
        assert memories.tokens.verify(secret) is not None
        assert memories.tokens.verify(secret + "x") is None
    finally:
        memories.backend.records.conn.set_trace_callback(None)  # type: ignore[attr-defined]
    assert statements, "verify reads the store at every call"
    digests = [hashlib.sha256(s.encode()).hexdigest() for s in (secret, secret + "x")]
    for statement in statements:
        assert secret not in statement and not any(d in statement for d in digests), statement
