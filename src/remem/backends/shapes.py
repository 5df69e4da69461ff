"""Checking the shape of vectors handed to a back-end before anything is written."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from remem.errors import StoreError

if TYPE_CHECKING:
    from remem.arrays import FloatArray


def windows_of(vectors: Sequence[FloatArray] | FloatArray, count: int, dim: int) -> list[FloatArray]:
    """Each memory's vectors as a (w, dim) matrix with w ≥ 1; StoreError on a wrong shape."""
    if len(vectors) != count:
        raise StoreError(f"got vectors for {len(vectors)} memories, expected {count}")
    shaped = []
    for item in vectors:
        if item.size == 0 or item.size % dim or item.ndim > 2 or (item.ndim == 2 and item.shape[1] != dim):
            raise StoreError(f"vectors of shape {item.shape} do not fit a {dim}-d model")
        shaped.append(item.reshape(-1, dim))
    return shaped
