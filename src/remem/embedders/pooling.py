"""Pooling and normalisation as small pure numpy functions."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from remem.arrays import FloatArray
from remem.embedders.spec import Pooling

#: Norms below this are treated as zero vectors (left as zeros rather than divided by ~0).
_MIN_NORM = 1e-12


def mean_pool(hidden: FloatArray, attention_mask: npt.NDArray[np.int64]) -> FloatArray:
    """Average each row's token vectors over the positions where the mask is 1.

    ``hidden`` is (batch, tokens, dim); ``attention_mask`` is (batch, tokens). Padding never counts.
    """
    mask = attention_mask.astype(np.float32)[:, :, None]
    summed = (hidden * mask).sum(axis=1)
    counts = np.clip(mask.sum(axis=1), 1e-9, None)
    pooled: FloatArray = (summed / counts).astype(np.float32)
    return pooled


def cls_pool(hidden: FloatArray, attention_mask: npt.NDArray[np.int64]) -> FloatArray:
    """Take each row's first token vector (the [CLS] position); the mask is not needed."""
    del attention_mask
    return np.ascontiguousarray(hidden[:, 0, :], dtype=np.float32)


def l2_normalize(vectors: FloatArray) -> FloatArray:
    """Scale every row to unit length (float32); all-zero rows stay zero."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: FloatArray = (vectors / np.maximum(norms, _MIN_NORM)).astype(np.float32)
    return unit


def pool(kind: Pooling, hidden: FloatArray, attention_mask: npt.NDArray[np.int64]) -> FloatArray:
    """Apply the pooling a model description names, then L2-normalise."""
    pooled = mean_pool(hidden, attention_mask) if kind is Pooling.MEAN else cls_pool(hidden, attention_mask)
    return l2_normalize(pooled)
