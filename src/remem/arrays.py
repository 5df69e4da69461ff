"""The array types shared by embedders, back-ends and the core. Importing this loads numpy: import
it under ``TYPE_CHECKING`` where numpy must stay off the startup path."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Unit vectors, one per row (float32).
FloatArray = npt.NDArray[np.float32]

#: How far from 1 a stored vector's length may be; every write into a store checks it
#: (``backends.shapes.windows_of``), ``doctor`` too. Measured: remem's own vectors of the bundled
#: model (original file, int8 variant, calibrated variant; 740 windows and queries of SciFact
#: documents, the memory-shaped set and edge cases) are at most 1.2e-7 from 1 (one float32 step;
#: 9e-8 computed in float64), so float32 rounding is 8,000 times below this. A caller's own embedder
#: normalising in float16 lands up to 6.5e-4 from 1 (20,000 random 384-d vectors), still inside. What a
#: damaged model gives — zero vectors (length 0), NaN, an unnormalised output — is far outside.
UNIT_TOLERANCE = 1e-3


def unit_rows(matrix: FloatArray) -> bool:
    """True when every row is finite and of unit length (within UNIT_TOLERANCE)."""
    if not np.isfinite(matrix).all():
        return False
    return bool(np.all(np.abs(np.linalg.norm(matrix, axis=1) - 1.0) <= UNIT_TOLERANCE))
