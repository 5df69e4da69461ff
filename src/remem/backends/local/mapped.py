"""An index file mapped read-only into memory: verified and searched without a private copy.

A million 384-d vectors are 1.5 GB. Reading them into the process (as remem did before index files
of version 3) costs a copy per process — 1.7–2 GB of RSS and 2–3 s for each cold ``remem search`` —
where the page cache already holds the file. Mapped, the process reads the page cache's own pages.

Verification reads every byte once, through the mapping, a piece at a time, and lets go of each
piece's pages after hashing it (XXH3-128 over a 1.8 GB file: 0.18 s and 88 MB of peak RSS, against
1.1 s for sha256 and the whole file kept mapped; see docs/performance.md). Exact scans let go of the
pages they read in the same way unless the process said it is long-lived (``resident``): a scan that
maps its pages again costs ~0.07 s more per 1.8 GB; one that keeps them has them counted in its RSS
(as shared, clean page-cache pages the kernel can reclaim).

What this relies on, and what happens otherwise: remem replaces an index file only by renaming a new
one over it, so a mapped file never changes under a reader (a reader keeps the verified old file
until it loads the new one). A program that truncates or rewrites the file *in place* while remem
has it mapped is not defended against: reading a page past a truncation raises SIGBUS.

On Windows a mapped file cannot be renamed over (nor a checkpoint written) while any process maps
it: there the file is read into memory of the process's own (``remem.portable.MAP_IN_PLACE``), a copy
per process as before version 3, and nothing holds the file open after loading.
"""

from __future__ import annotations

import mmap
import os
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from remem.portable import MAP_IN_PLACE, drop_pages

ByteArray = npt.NDArray[np.uint8]

#: Bytes hashed between two releases of pages: 64 MB (16 MB and 256 MB measured the same, 0.17–0.18 s
#: for 1.8 GB here; the piece bounds the peak RSS verification adds).
PIECE = 64 << 20


class MappedFile:
    """A whole file mapped read-only (shared with the page cache; never written through), or read
    into memory where a mapping would pin the file (see the module docstring)."""

    def __init__(self, handle: BinaryIO) -> None:
        """Map the file ``handle`` is open on (ValueError if it is empty); the mapping outlives it.
        Where files are not mapped in place, read it whole (its position is kept) instead."""
        #: The file's status when it was mapped (``verified.FileIdentity``).
        self.stat = os.fstat(handle.fileno())
        self.size = self.stat.st_size
        if not self.size:
            raise ValueError("the file is empty")
        self._map: mmap.mmap | None = None
        #: The mapped bytes (read only); slices are views, never copies.
        self.bytes: ByteArray
        if MAP_IN_PLACE:
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            self.bytes = np.frombuffer(self._map, dtype=np.uint8)
        else:
            self.bytes = _read_whole(handle, self.size)
        #: True when a long-lived process keeps the pages it reads mapped (see the module docstring).
        self.resident = False

    def digest(self, end: int) -> str:
        """The XXH3-128 (hex) of bytes ``[0, end)``, read a ``PIECE`` at a time, each piece's pages let
        go after it (resident or not: verifying is not using)."""
        import xxhash  # noqa: PLC0415 - only readers of mapped index files need it

        state = xxhash.xxh3_128()
        for start in range(0, end, PIECE):
            stop = min(end, start + PIECE)
            state.update(self.bytes[start:stop].data)
            self._let_go(start, stop)
        return state.hexdigest()

    def release(self, start: int, stop: int) -> None:
        """Let go of the pages wholly inside bytes ``[start, stop)`` unless ``resident``: they stay in
        the page cache and are mapped again when next read."""
        if not self.resident:
            self._let_go(start, stop)

    def _let_go(self, start: int, stop: int) -> None:
        first = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE
        last = stop // mmap.PAGESIZE * mmap.PAGESIZE
        if last > first and self._map is not None:
            drop_pages(self._map, first, last - first)


def _read_whole(handle: BinaryIO, size: int) -> ByteArray:
    """The ``size`` bytes of the file ``handle`` is open on, in a buffer whose start lies on a 64-byte
    boundary (as a mapping's does on a page), ``handle`` left where it was; OSError if it is short."""
    room = np.empty(size + 64, dtype=np.uint8)
    shift = -room.ctypes.data % 64
    whole = room[shift : shift + size]
    where = handle.tell()
    handle.seek(0)
    if handle.readinto(whole.data) != size:  # type: ignore[attr-defined]
        raise OSError(f"the file changed size while it was read ({size:,} bytes)")
    handle.seek(where)
    return whole
