"""The shipped model file is reproducible: ``modelbuild.build`` makes the pinned file, byte for byte."""

from __future__ import annotations

import hashlib

import pytest

from modelbuild.build import Built, build
from modelbuild.variant import MIN_AGREEMENT
from remem.embedders.registry import ALL_MINILM_L6_V2


@pytest.fixture(scope="module")
def built_twice() -> tuple[Built, Built]:
    """Two builds from the installed upstream file (about five seconds each)."""
    return build(), build()


def test_two_builds_give_the_same_bytes(built_twice: tuple[Built, Built]) -> None:
    first, second = built_twice
    assert first.data == second.data
    assert first.sha256 == hashlib.sha256(first.data).hexdigest()


def test_the_build_is_the_shipped_file(built_twice: tuple[Built, Built]) -> None:
    built, _ = built_twice
    assert built.sha256 == ALL_MINILM_L6_V2.model.sha256
    assert len(built.data) == ALL_MINILM_L6_V2.model.size
    assert built.fused == 12 and built.agreement >= MIN_AGREEMENT
