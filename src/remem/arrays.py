"""The array types shared by embedders, back-ends and the core. Importing this loads numpy: import
it under ``TYPE_CHECKING`` where numpy must stay off the startup path."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Unit vectors, one per row (float32).
FloatArray = npt.NDArray[np.float32]
