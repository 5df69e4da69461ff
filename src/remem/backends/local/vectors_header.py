"""The index file's header, readable without numpy or FAISS (for stats)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: Version 3 ends with ``CHECKSUM_PREFIX`` and the XXH3-128 of every byte before it, its header line
#: padded so that the vectors start on a cache line (the file is mapped, not read: see ``mapped``).
#: Version 2 ends with ``CHECKSUM_PREFIX_V2`` and the sha256 of the FAISS bytes; version 1 (older
#: remem) has no checksum. Both are still read (copied into memory, as those versions did).
MAGIC = b"REMEM-VECTORS 3\n"
MAGIC_V2 = b"REMEM-VECTORS 2\n"
MAGIC_V1 = b"REMEM-VECTORS 1\n"
MAGICS = (MAGIC, MAGIC_V2, MAGIC_V1)
CHECKSUM_PREFIX = b"xxh3-128 "
CHECKSUM_PREFIX_V2 = b"sha256 "


def read_header(path: Path) -> dict[str, Any] | None:
    """The JSON header of an index file, or None when it is missing or not a remem index."""
    try:
        with path.open("rb") as handle:
            if handle.read(len(MAGIC)) not in MAGICS:
                return None
            header = json.loads(handle.readline())
    except (OSError, ValueError):
        return None
    return header if isinstance(header, dict) else None
