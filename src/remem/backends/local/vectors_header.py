"""The index file's header, readable without numpy or FAISS (for stats)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The file ends with ``CHECKSUM_PREFIX`` and the XXH3-128 of every byte before it, its header line
#: padded so that the vectors start on a cache line (the file is mapped, not read: see ``mapped``).
MAGIC = b"REMEM-VECTORS 3\n"
CHECKSUM_PREFIX = b"xxh3-128 "


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
