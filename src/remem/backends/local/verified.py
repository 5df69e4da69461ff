"""An index file checked once, trusted after while it is the same file: its checksum is not read again.

Every index file is verified (every byte hashed, XXH3-128: ``vectors``) before it is trusted. At a
million vectors that reads 1.5–1.8 GB on every cold load — the largest part of what a `remem add` (its
similar-memory look-up) or a cold `remem search` costs there more than at a thousand. A process
that verified a file records what it checked in the store's database: the file's identity (device,
inode, size, modification and change times in nanoseconds) and its checksum. A later process that
finds the same identity and the same checksum line at the file's end trusts the bytes before it.

What that gives up: damage that leaves the file's identity as it was — bytes changed below the file
system (media errors the disk does not report, a write to the raw device) — is caught by the first
verification only, not by later loads; ``remem doctor`` and `remem reindex` always verify. Every
change through the file system (a write in place, a truncation, a file renamed over it, a copy or a
restored backup) gives it another change time or inode, so it is verified again: a change time
cannot be set back (``utime`` sets it to now). A file is recorded only when its change time lies
``SETTLED_NS`` before the verification began, so that a write in place after it cannot fall into
the same tick of a coarse file-system clock and keep the recorded times.

The record is written by the verifying process only when it can do so at once (its own transaction,
without waiting for a writer; a read-only store, a busy one or an open read snapshot skip it): it is
never needed, a missing one costs a verification. Nothing is trusted from a store's record that the
file does not also say: the checksum line is read from the file each time.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from dataclasses import asdict, dataclass

from remem.backends.local.connections import BUSY_TIMEOUT_MS
from remem.backends.local.records import Records
from remem.backends.local.transactions import atomic
from remem.errors import RememError

#: The store_meta key of the record.
META_KEY = "index_verified"
#: How long before a verification a file must have last changed to be recorded (far above any file
#: system's timestamp tick: ext4's coarse clock ticks every 1–10 ms).
SETTLED_NS = 2_000_000_000


@dataclass(frozen=True)
class FileIdentity:
    """What changes when a file is changed, replaced or copied through the file system."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, stat: os.stat_result) -> FileIdentity:
        """The identity in ``stat`` (``os.fstat`` of the open file)."""
        return cls(stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)

    def settled(self, now_ns: int) -> bool:
        """True when the file last changed ``SETTLED_NS`` before ``now_ns`` (see the module docstring)."""
        return max(self.mtime_ns, self.ctime_ns) <= now_ns - SETTLED_NS


@dataclass(frozen=True)
class Verified:
    """A file of this identity whose bytes matched this checksum (hex) when a process hashed them."""

    identity: FileIdentity
    digest: str


def recorded(records: Records) -> Verified | None:
    """The store's record of the last index file verified, or None (none, or unreadable)."""
    try:
        value = records.get_meta(META_KEY)
        if value is None:
            return None
        data = json.loads(value)
        return Verified(FileIdentity(**data["identity"]), str(data["digest"]))
    except (sqlite3.Error, ValueError, KeyError, TypeError):
        return None


def record(records: Records, verified: Verified) -> None:
    """Record ``verified`` if that can be done at once (see the module docstring); never raises."""
    conn = records.conn
    if conn.in_transaction:
        return
    value = json.dumps({"identity": asdict(verified.identity), "digest": verified.digest})
    with contextlib.suppress(sqlite3.Error, RememError):
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            with atomic(conn):
                records.set_meta(META_KEY, value)
        finally:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS:d}")
