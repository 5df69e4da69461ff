"""``remem serve``'s bounds, without the server: how many connections it serves at once and how
long a request may take to arrive (``connections`` holds each connection to them). Apart from the
server so that the front-end's defaults and ``remem.mcp`` read them without loading uvicorn."""

from __future__ import annotations

import errno
from collections.abc import Callable
from dataclasses import dataclass

from remem.errors import InvalidInputError
from remem.portable import open_files_limit

#: ``remem serve``'s bounds: how many connections it serves at once, and how long (seconds) a
#: request may take to arrive, headers and body.
MAX_CONNECTIONS, REQUEST_TIMEOUT = 500, 10.0
#: Errors of a process out of descriptors or memory for now: said, and tried again later.
OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
#: Descriptors kept for the rest of the server (the store, the model's files, the listening socket).
DESCRIPTOR_RESERVE = 64


@dataclass(frozen=True)
class Limits:
    """How many connections a server serves at once, and how long a request may take to arrive."""

    max_connections: int = MAX_CONNECTIONS
    request_timeout: float = REQUEST_TIMEOUT

    def check(self) -> None:
        """InvalidInputError when a limit is not positive."""
        if self.max_connections < 1:
            raise InvalidInputError("max_connections must be at least 1", parameter="max_connections")
        if not self.request_timeout > 0:
            raise InvalidInputError("request_timeout must be more than 0", parameter="request_timeout")

    def fit(self, note: Callable[[str], None]) -> Limits:
        """These limits with ``max_connections`` lowered below the descriptors the process may open
        (keeping ``DESCRIPTOR_RESERVE``), saying so on ``note``; as they are where there is no such
        limit (Windows)."""
        soft = open_files_limit()
        if soft is None or soft - DESCRIPTOR_RESERVE >= self.max_connections:
            return self
        fitted = max(1, soft - DESCRIPTOR_RESERVE if soft > 2 * DESCRIPTOR_RESERVE else soft // 2)
        note(
            f"remem serve: at most {fitted} connections at once, not {self.max_connections}: the process "
            f"may open {soft} files (ulimit -n)"
        )
        return Limits(fitted, self.request_timeout)
