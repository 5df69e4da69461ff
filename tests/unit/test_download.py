"""fetch_verified and directory_lock against a local HTTP server on 127.0.0.1 and real processes."""

from __future__ import annotations

import fcntl
import hashlib
import http.server
import multiprocessing
import os
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.embedders.download import CHUNK_SIZE, fetch_verified
from remem.embedders.locks import directory_lock
from remem.errors import DownloadError, EmbedderError

PAYLOAD = random.Random(20240611).randbytes(2 * CHUNK_SIZE + 654_321)  # three chunks, not aligned
SHA = hashlib.sha256(PAYLOAD).hexdigest()
CORRUPT = PAYLOAD[:1000] + bytes([PAYLOAD[1000] ^ 0xFF]) + PAYLOAD[1001:]
USER_AGENT = "remem-tests/1.0 (+download)"
HALF = len(PAYLOAD) // 2
STALL_AFTER = 100_000


class FileServer(http.server.ThreadingHTTPServer):
    """Serves PAYLOAD under paths with different behaviours and records every request."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[dict[str, str | None]] = []
        self.record_lock = threading.Lock()
        self.stopping = threading.Event()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def record(self, path: str, range_header: str | None, user_agent: str | None) -> None:
        with self.record_lock:
            self.requests.append({"path": path, "range": range_header, "user_agent": user_agent})

    def hits(self, path: str) -> list[dict[str, str | None]]:
        with self.record_lock:
            return [request for request in self.requests if request["path"] == path]


class Handler(http.server.BaseHTTPRequestHandler):
    server: FileServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_GET(self) -> None:
        self.server.record(self.path, self.headers.get("Range"), self.headers.get("User-Agent"))
        route = ROUTES.get(self.path)
        try:
            if route is None:
                self.send_error(404)
            else:
                route(self)
        except ConnectionError:  # the client hung up (e.g. it refused an oversized body)
            pass

    def serve(self, body: bytes, *, ranges: bool = True, length: bool = True, pace: float = 0.0) -> None:
        """Send body, honouring ``Range: bytes=N-`` unless ranges is False."""
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        start = int(match.group(1)) if ranges and match else 0
        if ranges and match and start >= len(body):
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(body)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(206 if ranges and match else 200)
        if ranges and match:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        if length:
            self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        step = 64 * 1024 if pace else len(body)
        for offset in range(start, len(body), step):
            self.wfile.write(body[offset : offset + step])
            time.sleep(pace)

    def cut(self) -> None:
        """Announce the whole file, send half of it, then close the connection."""
        self.send_response(200)
        self.send_header("Content-Length", str(len(PAYLOAD)))
        self.end_headers()
        self.wfile.write(PAYLOAD[:HALF])
        self.wfile.flush()
        self.close_connection = True

    def stall(self) -> None:
        """Announce the whole file, send a little, then go silent."""
        self.send_response(200)
        self.send_header("Content-Length", str(len(PAYLOAD)))
        self.end_headers()
        self.wfile.write(PAYLOAD[:STALL_AFTER])
        self.wfile.flush()
        self.server.stopping.wait(10)

    def wrong_range(self) -> None:
        """Answer any Range with a 206 that starts at byte 0 instead."""
        if self.headers.get("Range") is None:
            self.serve(PAYLOAD)
            return
        self.send_response(206)
        self.send_header("Content-Range", f"bytes 0-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
        self.send_header("Content-Length", str(len(PAYLOAD)))
        self.end_headers()
        self.wfile.write(PAYLOAD)

    def redirect(self) -> None:
        self.send_response(302)
        self.send_header("Location", "/good")
        self.send_header("Content-Length", "0")
        self.end_headers()


ROUTES: dict[str, Callable[[Handler], None]] = {
    "/good": lambda h: h.serve(PAYLOAD),
    "/slow": lambda h: h.serve(PAYLOAD, pace=0.02),
    "/corrupt": lambda h: h.serve(CORRUPT),
    "/ignores-range": lambda h: h.serve(PAYLOAD, ranges=False),
    "/no-length": lambda h: h.serve(PAYLOAD, ranges=False, length=False),
    "/too-big": lambda h: h.serve(PAYLOAD + b"extra bytes"),
    "/too-big-unannounced": lambda h: h.serve(PAYLOAD + b"extra bytes", ranges=False, length=False),
    "/cut": Handler.cut,
    "/stall": Handler.stall,
    "/wrong-range": Handler.wrong_range,
    "/redirect": Handler.redirect,
    "/forbidden": lambda h: h.send_error(403),
    "/broken": lambda h: h.send_error(500),
}


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """urllib honours *_proxy variables; the tests talk to 127.0.0.1 directly (children inherit this)."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def server() -> Iterator[FileServer]:
    srv = FileServer()
    thread = threading.Thread(target=srv.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.stopping.set()
        srv.shutdown()
        srv.server_close()
        thread.join(10)


def fetch(url: str, dest: Path, **options: Any) -> list[int]:
    """fetch_verified with PAYLOAD's sha256 and size unless overridden; returns the progress calls."""
    calls: list[int] = []
    options.setdefault("sha256", SHA)
    options.setdefault("size", len(PAYLOAD))
    options.setdefault("user_agent", USER_AGENT)
    fetch_verified(url, dest, progress=calls.append, **options)
    return calls


def part_of(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def test_downloads_verifies_and_installs(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    calls = fetch(server.url("/good"), dest)
    assert dest.read_bytes() == PAYLOAD
    assert not part_of(dest).exists()
    assert calls[0] == 0 and sum(calls) == len(PAYLOAD) and len(calls) == 4  # start + three chunks
    [request] = server.hits("/good")
    assert request["user_agent"] == USER_AGENT and request["range"] is None


def test_an_installed_file_is_not_downloaded_again(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    dest.write_bytes(PAYLOAD)
    fetch(server.url("/good"), dest, sha256=SHA.upper())
    assert server.requests == []
    assert dest.read_bytes() == PAYLOAD


def test_a_wrong_installed_file_is_replaced(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    dest.write_bytes(b"an older model")
    fetch(server.url("/good"), dest)
    assert dest.read_bytes() == PAYLOAD


def test_sha256_mismatch_leaves_nothing_behind(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    with pytest.raises(DownloadError) as caught:
        fetch(server.url("/corrupt"), dest)
    message = str(caught.value)
    assert "model.onnx" in message and "verification" in message
    assert hashlib.sha256(CORRUPT).hexdigest()[:12] in message and SHA[:12] in message
    assert not dest.exists() and not part_of(dest).exists()
    assert isinstance(caught.value, EmbedderError)


def test_a_cut_download_keeps_its_part_and_resumes(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    with pytest.raises(DownloadError, match=rf"interrupted after {HALF} bytes.*again to resume"):
        fetch(server.url("/cut"), dest)
    assert part_of(dest).read_bytes() == PAYLOAD[:HALF]
    assert not dest.exists()
    calls = fetch(server.url("/good"), dest)
    assert server.hits("/good")[0]["range"] == f"bytes={HALF}-"
    assert dest.read_bytes() == PAYLOAD and not part_of(dest).exists()
    assert calls[0] == HALF and sum(calls) == len(PAYLOAD)


def test_a_stalled_download_times_out_and_keeps_its_part(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    started = time.monotonic()
    with pytest.raises(DownloadError, match=r"interrupted after .*timed out.*again to resume"):
        fetch(server.url("/stall"), dest, timeout=0.5)
    assert time.monotonic() - started < 5
    kept = part_of(dest).read_bytes()
    assert PAYLOAD.startswith(kept) and len(kept) <= STALL_AFTER
    fetch(server.url("/good"), dest)
    assert dest.read_bytes() == PAYLOAD


@pytest.mark.parametrize(
    ("path", "status"),
    [("/missing", "HTTP 404 Not Found"), ("/forbidden", "HTTP 403 Forbidden"), ("/broken", "HTTP 500")],
)
def test_refusals_raise_and_create_nothing(
    server: FileServer, tmp_path: Path, path: str, status: str
) -> None:
    dest = tmp_path / "model.onnx"
    with pytest.raises(DownloadError, match=status) as caught:
        fetch(server.url(path), dest)
    assert server.url(path) in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_a_refusal_leaves_an_existing_part_untouched(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    part_of(dest).write_bytes(PAYLOAD[:1234])
    with pytest.raises(DownloadError, match="HTTP 404"):
        fetch(server.url("/missing"), dest)
    assert server.hits("/missing")[0]["range"] == "bytes=1234-"
    assert part_of(dest).read_bytes() == PAYLOAD[:1234] and not dest.exists()


def test_a_server_ignoring_range_starts_over(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    part_of(dest).write_bytes(b"x" * 5000)  # garbage: kept, it would fail the sha256
    calls = fetch(server.url("/ignores-range"), dest)
    assert server.hits("/ignores-range")[0]["range"] == "bytes=5000-"
    assert dest.read_bytes() == PAYLOAD and not part_of(dest).exists()
    assert calls[0] == 0 and sum(calls) == len(PAYLOAD)


def test_a_complete_part_is_verified_after_416(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    part_of(dest).write_bytes(PAYLOAD)
    fetch(server.url("/good"), dest)
    assert [r["range"] for r in server.hits("/good")] == [f"bytes={len(PAYLOAD)}-"]
    assert dest.read_bytes() == PAYLOAD and not part_of(dest).exists()


@pytest.mark.parametrize("stale", [CORRUPT, PAYLOAD + b"trailing junk"], ids=["corrupt", "too-long"])
def test_an_unusable_part_after_416_starts_over_once(
    server: FileServer, tmp_path: Path, stale: bytes
) -> None:
    dest = tmp_path / "model.onnx"
    part_of(dest).write_bytes(stale)
    fetch(server.url("/good"), dest)
    assert [r["range"] for r in server.hits("/good")] == [f"bytes={len(stale)}-", None]
    assert dest.read_bytes() == PAYLOAD and not part_of(dest).exists()


def test_a_body_bigger_than_size_is_cut_off_and_deleted(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    with pytest.raises(DownloadError, match=f"more than the expected {len(PAYLOAD)} bytes"):
        fetch(server.url("/too-big-unannounced"), dest)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kept", [0, 1000], ids=["content-length", "content-range"])
def test_an_announced_oversized_file_is_refused_before_its_body(
    server: FileServer, tmp_path: Path, kept: int
) -> None:
    dest = tmp_path / "model.onnx"
    if kept:
        part_of(dest).write_bytes(PAYLOAD[:kept])
    calls: list[int] = []
    with pytest.raises(DownloadError, match=f"is {len(PAYLOAD) + 11} bytes, expected {len(PAYLOAD)}"):
        fetch_verified(
            server.url("/too-big"),
            dest,
            sha256=SHA,
            size=len(PAYLOAD),
            user_agent=USER_AGENT,
            progress=calls.append,
        )
    assert calls == []  # refused on the headers: not one byte was taken
    assert list(tmp_path.iterdir()) == []


def test_a_206_from_the_wrong_offset_starts_over(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    part_of(dest).write_bytes(PAYLOAD[:5000])
    fetch(server.url("/wrong-range"), dest)
    assert [r["range"] for r in server.hits("/wrong-range")] == ["bytes=5000-", None]
    assert dest.read_bytes() == PAYLOAD and not part_of(dest).exists()


def test_unknown_size_without_content_length(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    calls = fetch(server.url("/no-length"), dest, size=None)
    assert dest.read_bytes() == PAYLOAD and sum(calls) == len(PAYLOAD)


def test_redirects_are_followed_with_the_user_agent(server: FileServer, tmp_path: Path) -> None:
    dest = tmp_path / "model.onnx"
    fetch(server.url("/redirect"), dest)
    assert dest.read_bytes() == PAYLOAD
    assert [r["user_agent"] for r in server.requests] == [USER_AGENT, USER_AGENT]


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://127.0.0.1/model.onnx", "data:,hello", "http:///no-host", "model.onnx"],
)
def test_only_http_urls_are_accepted(tmp_path: Path, url: str) -> None:
    with pytest.raises(DownloadError, match="only http:// and https://"):
        fetch(url, tmp_path / "model.onnx")
    assert list(tmp_path.iterdir()) == []


def test_a_malformed_sha256_is_refused(server: FileServer, tmp_path: Path) -> None:
    with pytest.raises(DownloadError, match="not a sha256"):
        fetch(server.url("/good"), tmp_path / "model.onnx", sha256="abc123")
    assert server.requests == []


def test_an_unreachable_server_raises(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port that was just free: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(DownloadError, match="cannot download"):
        fetch(f"http://127.0.0.1:{port}/model.onnx", tmp_path / "model.onnx", timeout=5)
    assert list(tmp_path.iterdir()) == []


def _locked_fetch(url: str, dest: str, barrier: Any, results: Any) -> None:
    """Child process: wait for the sibling, then download under the directory lock."""
    barrier.wait(60)
    try:
        with directory_lock(Path(dest).parent):
            fetch_verified(url, Path(dest), sha256=SHA, size=len(PAYLOAD), user_agent=USER_AGENT)
    except BaseException as exc:
        results.put(repr(exc))
        raise
    results.put("ok")


@pytest.mark.slow
def test_two_processes_download_once_under_the_lock(server: FileServer, tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    dest = tmp_path / "models" / "model.onnx"
    barrier, results = context.Barrier(2), context.Queue()
    workers = [
        context.Process(target=_locked_fetch, args=(server.url("/slow"), str(dest), barrier, results))
        for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(30)
    assert outcomes == ["ok", "ok"]
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert dest.read_bytes() == PAYLOAD and not part_of(dest).exists()
    assert len(server.hits("/slow")) == 1  # the second process waited, then found the file installed


def _hold_lock(directory: str, holding: Any, release: Any) -> None:
    """Child process: take the lock, say so, and keep it until told to let go."""
    with directory_lock(Path(directory)):
        holding.set()
        release.wait(60)


@pytest.mark.slow
def test_directory_lock_excludes_another_process(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    directory = tmp_path / "models"
    holding, release = context.Event(), context.Event()
    child = context.Process(target=_hold_lock, args=(str(directory), holding, release))
    child.start()
    try:
        assert holding.wait(60)
        fd = os.open(directory / ".lock", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        acquired = threading.Event()
        waiter = threading.Thread(target=_take_lock, args=(directory, acquired), daemon=True)
        waiter.start()
        assert not acquired.wait(0.5)
        release.set()
        assert acquired.wait(30)
        waiter.join(10)
    finally:
        release.set()
        child.join(30)
    assert child.exitcode == 0


def _take_lock(directory: Path, acquired: threading.Event) -> None:
    with directory_lock(directory):
        acquired.set()


def test_directory_lock_creates_a_private_directory(tmp_path: Path) -> None:
    directory = tmp_path / "cache" / "models"
    with directory_lock(directory):
        assert (directory / ".lock").is_file()
        assert directory.stat().st_mode & 0o777 == 0o700
    assert (
        not directory.exists()
    )  # left unused: removed with its lock (tests/unit/test_model_directory_lock.py)
    with directory_lock(directory):  # released: can be taken again
        pass
