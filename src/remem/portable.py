"""What differs between the systems remem runs on (Linux, macOS, Windows), in one place.

File locks go through ``filelock``'s native lock of a descriptor (``flock`` on POSIX, ``LockFileEx``
on Windows); permission bits mean something only on POSIX (on Windows a file's ACL, inherited from
its directory, says who may read it, and ``chmod`` sets nothing but the read-only flag); a mapping's
pages are let go of where the system can (``madvise``); the open-files limit exists on POSIX only.
Everything else remem does to files is the same everywhere (``os.replace``, ``os.open`` with
``O_EXCL``, SQLite's own locking). remem imports no POSIX-only module (fcntl, termios, pwd, grp)
but ``resource``, here, where it may be missing: tests/integration/test_supported_systems.py runs
the commands where they and POSIX-only names of ``os``, ``mmap`` and ``signal`` are missing.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import time

#: True where permission bits (0600, 0700) decide who may read a file: every system but Windows.
PERMISSION_BITS = os.name != "nt"
#: True where a file can be renamed over while a process maps it (POSIX): the index file is then read
#: in place; on Windows a mapping would pin the file, so a process reads a copy (``mapped``).
MAP_IN_PLACE = os.name != "nt"
#: ``os.open``'s flag that refuses to follow a symbolic link as the last part (0 where there is none).
NO_FOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
#: The longest pause (seconds) between two tries of a lock another process holds: short while the
#: holder is a commit (bench/locks.py), longer once it has held it a second (an ingest, a reindex).
LOCK_POLL_MAX, LOCK_POLL_LONG = 0.001, 0.05


def set_mode(fd: int, mode: int) -> None:
    """Give the file open as ``fd`` the permission bits ``mode`` where they mean something (not on
    Windows, where the file keeps its directory's ACL). OSError propagates."""
    if PERMISSION_BITS and hasattr(os, "fchmod"):
        os.fchmod(fd, mode)


def lock_file(fd: int, *, blocking: bool = True) -> bool:
    """Lock the file open as ``fd`` exclusively against other processes (and other descriptors of
    it): wait until no one else holds it and return True, or, not ``blocking``, return False at once
    when someone does. The lock goes with ``unlock_file``, when the descriptor is closed or the process
    ends. OSError when the file cannot be locked at all."""
    from filelock import lock_descriptor  # noqa: PLC0415 - only writers pay for its import

    pause, began = LOCK_POLL_MAX / 16, time.monotonic()
    while not lock_descriptor(fd, blocking=False):
        if not blocking:
            return False
        time.sleep(pause)
        longest = LOCK_POLL_MAX if time.monotonic() - began < 1 else LOCK_POLL_LONG
        pause = min(2 * pause, longest)
    return True


def unlock_file(fd: int) -> None:
    """Release ``lock_file``'s lock on ``fd`` (the descriptor stays open; an error is ignored: closing
    the descriptor releases it too)."""
    from filelock import unlock_descriptor  # noqa: PLC0415

    with contextlib.suppress(OSError):
        unlock_descriptor(fd)


def drop_pages(mapping: mmap.mmap, start: int, length: int) -> None:
    """Let go of ``length`` bytes of ``mapping``'s pages from ``start`` (page-aligned): they stay in
    the page cache and are mapped again when next read. Where the system cannot (Windows), they
    stay mapped."""
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if advice is not None:
        mapping.madvise(advice, start, length)


def open_files_limit() -> int | None:
    """How many files this process may open (the soft limit), or None when unbounded or when the
    system has no such limit for sockets (Windows)."""
    try:
        import resource  # noqa: PLC0415 - POSIX only
    except ImportError:
        return None

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft
