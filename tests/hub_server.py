"""A stand-in for the Hugging Face hub on 127.0.0.1: serves files by path, with Range, and can
refuse a file or cut its body off — so `remem model pull` is tested with no real network."""

from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class HubServer(http.server.ThreadingHTTPServer):
    """Files by URL path; ``refuse`` paths get 403, ``cut`` paths send only that many bytes."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files: dict[str, bytes] = {}
        self.refuse: set[str] = set()
        self.cut: dict[str, int] = {}
        self.requests: list[tuple[str, str | None]] = []

    @property
    def endpoint(self) -> str:
        """What REMEM_HF_ENDPOINT is set to."""
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: HubServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.requests.append((self.path, self.headers.get("Range")))
        body = self.server.files.get(self.path)
        if body is None or self.path in self.server.refuse:
            self.send_error(404 if body is None else 403)
            return
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        start = int(match.group(1)) if match else 0
        self.send_response(206 if match else 200)
        if match:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        stop = self.server.cut.get(self.path, len(body))
        self.wfile.write(body[start:stop])
        self.close_connection = True


@contextmanager
def hub_server() -> Iterator[HubServer]:
    """A running HubServer, shut down afterwards."""
    server = HubServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
