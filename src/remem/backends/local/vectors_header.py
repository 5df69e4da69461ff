"""The index file's header, readable without numpy or FAISS (for stats)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: Version 2 ends with ``CHECKSUM_PREFIX`` and the sha256 of the FAISS bytes; version 1 (older
#: remem) has no checksum and is still read.
MAGIC = b"REMEM-VECTORS 2\n"
MAGIC_V1 = b"REMEM-VECTORS 1\n"
CHECKSUM_PREFIX = b"sha256 "


def read_header(path: Path) -> dict[str, Any] | None:
    """The JSON header of an index file, or None when it is missing or not a remem index."""
    try:
        with path.open("rb") as handle:
            if handle.read(len(MAGIC)) not in (MAGIC, MAGIC_V1):
                return None
            header = json.loads(handle.readline())
    except (OSError, ValueError):
        return None
    return header if isinstance(header, dict) else None
