"""The index file's header, readable without numpy or FAISS (for stats)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

MAGIC = b"REMEM-VECTORS 1\n"


def read_header(path: Path) -> dict[str, Any] | None:
    """The JSON header of an index file, or None when it is missing or not a remem index."""
    try:
        with path.open("rb") as handle:
            if handle.read(len(MAGIC)) != MAGIC:
                return None
            header = json.loads(handle.readline())
    except (OSError, ValueError):
        return None
    return header if isinstance(header, dict) else None
