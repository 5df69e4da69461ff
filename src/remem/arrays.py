"""The array types shared by embedders, back-ends and the core. Importing this loads numpy: import
it under ``TYPE_CHECKING`` where numpy must stay off the startup path."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Unit vectors, one per row (float32).
FloatArray = npt.NDArray[np.float32]

#: How far from 1 a stored vector's length may be (float32 rounding stays far below this).
UNIT_TOLERANCE = 1e-3


def unit_rows(matrix: FloatArray) -> bool:
    """True when every row is finite and of unit length (within UNIT_TOLERANCE)."""
    if not np.isfinite(matrix).all():
        return False
    return bool(np.all(np.abs(np.linalg.norm(matrix, axis=1) - 1.0) <= UNIT_TOLERANCE))
