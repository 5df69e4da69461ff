"""What both back-ends share about staged rows (``remem.backends.staging``): a memory staged and
read back, and a page of vectors checked at once as every vector written is checked."""

from __future__ import annotations

import numpy as np
import pytest

from remem import NewMemory
from remem.backends.staging import StagedRow, memory_json, memory_of, page_windows
from remem.errors import EmbedderError, StoreError
from remem.testing import fake_vector


def _row(seq: int, vector: bytes | None) -> StagedRow:
    return StagedRow(seq, b"e", b"d", None, "{}", False, vector)


def test_a_memory_is_staged_and_read_back_as_it_was() -> None:
    memory = NewMemory("a text", user="ann", conversation="c", role="user", tags=["b", "a"], meta={"k": "v"},
                       created_at="2025-01-02T03:04:05Z", id=7)  # fmt: skip
    assert memory_of(memory_json(memory)) == memory


def test_a_page_of_vectors_is_split_back_into_each_rows_windows() -> None:
    one, two = fake_vector("one"), np.stack([fake_vector("two"), fake_vector("three")])
    rows = [_row(0, one.astype("<f4").tobytes()), _row(1, two.astype("<f4").tobytes())]
    first, second = page_windows(rows, 64, "here")
    assert first.shape == (1, 64) and np.array_equal(first[0], one)
    assert second.shape == (2, 64) and np.array_equal(second, two)


def test_a_page_with_a_bad_vector_is_refused_as_any_write_of_it_would_be() -> None:
    bad = fake_vector("x") * 2
    with pytest.raises(EmbedderError, match="not of unit length"):
        page_windows([_row(0, fake_vector("a").tobytes()), _row(1, bad.tobytes())], 64, "here")
    with pytest.raises(StoreError, match="do not fit a 64-d model"):
        page_windows([_row(0, b"\0" * 12)], 64, "here")
    with pytest.raises(StoreError, match="changed what this one staged"):
        page_windows([_row(0, None)], 64, "here")
