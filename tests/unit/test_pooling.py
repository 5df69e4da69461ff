"""Pooling and normalisation: pure numpy, checked against hand computations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from remem.embedders.pooling import cls_pool, l2_normalize, mean_pool, pool
from remem.embedders.spec import Pooling


def _batch() -> tuple[np.ndarray, np.ndarray]:
    """Two rows of 4 tokens x 3 dims; the second row has two padded positions with huge values."""
    hidden = np.array(
        [
            [[1.0, 2.0, 3.0], [3.0, 4.0, 5.0], [5.0, 6.0, 7.0], [7.0, 8.0, 9.0]],
            [[2.0, 0.0, -2.0], [4.0, 2.0, 0.0], [1e6, 1e6, 1e6], [-1e6, 5e5, 3e6]],
        ],
        dtype=np.float32,
    )
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=np.int64)
    return hidden, mask


def test_mean_pool_matches_hand_computation_and_ignores_padding() -> None:
    hidden, mask = _batch()
    pooled = mean_pool(hidden, mask)
    expected = np.array([[4.0, 5.0, 6.0], [3.0, 1.0, -1.0]], dtype=np.float32)
    np.testing.assert_allclose(pooled, expected, rtol=0, atol=1e-6)
    assert pooled.dtype == np.float32
    assert pooled.shape == (2, 3)


def test_mean_pool_padding_values_do_not_matter() -> None:
    hidden, mask = _batch()
    changed = hidden.copy()
    changed[1, 2:, :] = np.random.default_rng(1).normal(size=(2, 3)) * 1e3
    np.testing.assert_array_equal(mean_pool(hidden, mask), mean_pool(changed, mask))


def test_mean_pool_all_masked_row_is_zero_not_nan() -> None:
    hidden = np.ones((1, 3, 2), dtype=np.float32)
    mask = np.zeros((1, 3), dtype=np.int64)
    pooled = mean_pool(hidden, mask)
    assert np.all(np.isfinite(pooled))
    np.testing.assert_array_equal(pooled, np.zeros((1, 2), dtype=np.float32))


def test_cls_pool_takes_position_zero() -> None:
    hidden, mask = _batch()
    pooled = cls_pool(hidden, mask)
    np.testing.assert_array_equal(pooled, np.array([[1.0, 2.0, 3.0], [2.0, 0.0, -2.0]], dtype=np.float32))
    assert pooled.dtype == np.float32
    assert pooled.flags["C_CONTIGUOUS"]


def test_cls_pool_converts_float64_to_float32() -> None:
    hidden = np.arange(12, dtype=np.float64).reshape(2, 2, 3)
    pooled = cls_pool(hidden, np.ones((2, 2), dtype=np.int64))  # type: ignore[arg-type]
    assert pooled.dtype == np.float32
    np.testing.assert_array_equal(pooled, [[0, 1, 2], [6, 7, 8]])


def test_l2_normalize_unit_rows_and_zero_row_stays_zero() -> None:
    vectors = np.array([[3.0, 4.0], [0.0, 0.0], [-2.0, 0.0]], dtype=np.float32)
    unit = l2_normalize(vectors)
    assert unit.dtype == np.float32
    np.testing.assert_allclose(unit, [[0.6, 0.8], [0.0, 0.0], [-1.0, 0.0]], atol=1e-7)
    assert not np.any(np.isnan(unit))


def test_l2_normalize_float64_input_gives_float32() -> None:
    unit = l2_normalize(np.array([[1.0, 1.0]], dtype=np.float64))
    assert unit.dtype == np.float32
    np.testing.assert_allclose(unit, [[2**-0.5, 2**-0.5]], atol=1e-7)


@settings(max_examples=50, deadline=None)
@given(
    arrays(
        np.float32,
        st.tuples(st.integers(1, 5), st.integers(1, 8)),
        elements=st.floats(-1e3, 1e3, width=32),
    )
)
def test_l2_normalize_property(vectors: np.ndarray) -> None:
    unit = l2_normalize(vectors)
    norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
    out_norms = np.linalg.norm(unit.astype(np.float64), axis=1)
    for norm, out_norm, row, out_row in zip(norms, out_norms, vectors, unit, strict=True):
        if norm == 0.0:
            assert np.all(out_row == 0.0)
        elif norm > 1e-6:
            assert out_norm == pytest.approx(1.0, abs=1e-5)
            # same direction as the input
            assert float(np.dot(row.astype(np.float64), out_row)) == pytest.approx(norm, rel=1e-4)


def test_pool_mean_dispatch() -> None:
    hidden, mask = _batch()
    out = pool(Pooling.MEAN, hidden, mask)
    expected = np.array([[4.0, 5.0, 6.0], [3.0, 1.0, -1.0]])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(out, expected, atol=1e-6)
    assert out.dtype == np.float32


def test_pool_cls_dispatch() -> None:
    hidden, mask = _batch()
    out = pool(Pooling.CLS, hidden, mask)
    expected = np.array([[1.0, 2.0, 3.0], [2.0, 0.0, -2.0]])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(out, expected, atol=1e-6)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
