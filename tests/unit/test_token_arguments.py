"""The arguments of ``Memories.tokens.add`` (``remem.core.tokens``): a bad name, user, conversation
or expiry, or ``private`` without a user, is an InvalidInputError naming it, a wrong type a
TypeError, and no token is stored. Each is refused while the token is made, before the back-end is
asked for anything, so one local store runs them; what a back-end does with tokens (a name taken,
the hash stored, a revocation seen by another process) is tests/contract/test_tokens_contract.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import remem
from remem import Memories
from remem.errors import InvalidInputError
from remem.testing import FakeEmbedder


@pytest.fixture
def memories(tmp_path: Path) -> Iterator[Memories]:
    with remem.open(tmp_path / "store", embedder=FakeEmbedder(), models_dir=tmp_path / "models") as opened:
        yield opened


@pytest.mark.parametrize(
    ("arguments", "parameter"),
    [
        ({"user": "a", "name": "two words"}, "name"),
        ({"user": "a", "name": "   "}, "name"),
        ({"user": "a", "name": "x" * 65}, "name"),
        ({"user": "a", "name": "tab\there"}, "name"),
        ({"user": "a", "name": "bell\x07"}, "name"),
        ({"user": "a", "name": "zero\u200bwidth"}, "name"),
        ({"user": None, "private": True}, "private"),
        ({"user": " "}, "user"),
        ({"user": "a", "conversation": ""}, "conversation"),
    ],
)
def test_bad_arguments_are_refused_and_nothing_is_stored(
    memories: Memories, arguments: dict[str, Any], parameter: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        memories.tokens.add(**arguments)
    assert refused.value.parameter == parameter
    assert "\n" not in str(refused.value)
    assert memories.tokens.list() == []


def test_wrong_types_are_type_errors(memories: Memories) -> None:
    with pytest.raises(TypeError, match=r"^read_only must be True or False"):
        memories.tokens.add(user="a", read_only="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^user must be a string or None"):
        memories.tokens.add(user=3)  # type: ignore[arg-type]
    assert memories.tokens.list() == []


@pytest.mark.parametrize(
    ("expires_at", "message"),
    [
        (
            "2020-01-01",
            "expires_at has passed: a token expires at a time still to come",
        ),
        ("soon", "expires_at 'soon' is neither a time from now"),
        ("0s", "has passed"),
    ],
)
def test_a_bad_or_past_expiry_is_refused_and_nothing_is_stored(
    memories: Memories, expires_at: str, message: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        memories.tokens.add(user="alice", expires_at=expires_at)
    assert message in str(refused.value) and refused.value.parameter == "expires_at"
    assert memories.tokens.list() == []
    with pytest.raises(TypeError):
        memories.tokens.add(user="alice", expires_at=30)  # type: ignore[arg-type]
