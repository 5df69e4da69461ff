"""Verified downloads of model files: resume a partial file, check its sha256, install it atomically.

A download goes to ``<dest>.part`` and becomes ``dest`` (by one ``os.replace``) only once its sha256
matches, so ``dest`` is always either absent, the old file, or the verified new one. An interrupted
download keeps its ``.part`` and the next call resumes it with an HTTP Range request. Only the
standard library is used; proxies come from the usual ``*_proxy`` variables, as for any urllib client.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from remem.atomic import fsync_directory
from remem.embedders.spec import file_sha256
from remem.errors import DownloadError

ProgressFn = Callable[[int], None]
"""Called with the number of new bytes received; first with the bytes kept from a partial download."""

CHUNK_SIZE = 1 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)", re.IGNORECASE)
_NETWORK_ERRORS = (OSError, http.client.HTTPException)  # URLError, timeouts, resets are OSErrors


@dataclass(frozen=True)
class _Job:
    url: str
    dest: Path
    part: Path
    sha256: str
    size: int | None
    user_agent: str
    progress: ProgressFn
    timeout: float
    proxies: Mapping[str, str]


class _CannotResumeError(Exception):
    """The .part cannot be resumed from this response: discard it and download from byte 0."""


def fetch_verified(
    url: str,
    dest: Path,
    *,
    sha256: str,
    size: int | None,
    user_agent: str,
    progress: ProgressFn | None = None,
    timeout: float = 30.0,
    proxies: Mapping[str, str] | None = None,
) -> None:
    """Download url to dest, resuming a partial download, and install it only if its sha256 matches.

    Returns at once, without network, when dest already has that sha256. Otherwise on return dest
    is the verified file (replaced atomically, directory fsynced). Raises DownloadError when the URL
    is not http(s), the server refuses, the body is cut (the .part is kept so the same call resumes),
    the file is bigger than ``size``, or the sha256 differs (the .part is deleted). dest is never
    replaced by unverified data. Callers serialise concurrent calls with :func:`directory_lock`.
    ``proxies`` maps a scheme to a proxy URL (as ``urllib.request.getproxies()`` returns); none by
    default — this module never reads the environment.
    """
    _check_url(url)
    expected = sha256.strip().lower()
    if not _SHA256.fullmatch(expected):
        raise DownloadError(f"cannot verify {dest.name}: {sha256!r} is not a sha256 hex digest")
    if dest.is_file() and file_sha256(dest) == expected:
        return
    part = dest.with_name(dest.name + ".part")
    job = _Job(url, dest, part, expected, size, user_agent, progress or _no_progress, timeout, proxies or {})
    try:
        _download(job, _length_of(job.part))
    except _CannotResumeError:
        _discard(job.part)
        _download(job, 0)
    _install(job)


def _check_url(url: str) -> None:
    try:
        parts = urllib.parse.urlsplit(url)
        usable = parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
    except ValueError:
        usable = False
    if not usable:
        raise DownloadError(f"refusing to download {url!r}: only http:// and https:// URLs are allowed")


def _download(job: _Job, offset: int) -> None:
    """Leave the whole body in job.part (not yet verified), resuming from ``offset`` if it is > 0."""
    headers = {"User-Agent": job.user_agent, "Accept-Encoding": "identity"}
    if offset > 0:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(job.url, headers=headers)
    try:
        response: http.client.HTTPResponse = _opener(job.proxies).open(request, timeout=job.timeout)
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code == 416 and offset > 0:  # nothing after offset: the .part may already be whole
            if (job.size is None or offset == job.size) and file_sha256(job.part) == job.sha256:
                return
            raise _CannotResumeError from None
        raise DownloadError(f"cannot download {job.url}: HTTP {exc.code} {exc.reason}") from None
    except _NETWORK_ERRORS as exc:
        raise DownloadError(f"cannot download {job.url}: {_reason(exc)}") from exc
    with response:
        start, end = _body_span(job, response, offset)
        _stream(job, response, start, end)


def _opener(proxies: Mapping[str, str]) -> urllib.request.OpenerDirector:
    """An opener for http(s) only: redirects are followed, but never to file:, ftp: or data: URLs."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(dict(proxies)),
        urllib.request.UnknownHandler(),
        urllib.request.HTTPHandler(),
        urllib.request.HTTPSHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        urllib.request.HTTPRedirectHandler(),
        urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    return opener


def _body_span(job: _Job, response: http.client.HTTPResponse, offset: int) -> tuple[int, int | None]:
    """Where the body starts in the file and where the file ends (None if not announced)."""
    length = response.length  # Content-Length, or None
    if response.status == 200:
        start, end = 0, length
    elif response.status == 206 and offset > 0:
        match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
        if match is None or int(match.group(1)) != offset:
            raise _CannotResumeError
        start = offset
        end = int(match.group(3)) if match.group(3) != "*" else None
        if end is None and length is not None:
            end = offset + length
    else:
        raise DownloadError(f"cannot download {job.url}: unexpected HTTP {response.status} {response.reason}")
    if job.size is not None and end is not None and end > job.size:
        _discard(job.part)
        raise DownloadError(
            f"cannot download {job.url}: the server's file is {end} bytes, expected {job.size}; discarded it"
        )
    return start, end


def _stream(job: _Job, response: http.client.HTTPResponse, start: int, end: int | None) -> None:
    """Write the body into job.part from byte ``start``; raise (keeping the .part) if it stops early."""
    try:
        with open(job.part, "ab") as out:
            out.truncate(start)
            received, failure = _copy(job, response, out, start)
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        raise DownloadError(f"cannot write {job.part}: {exc.strerror or exc}") from exc
    expected = end if end is not None else job.size
    if failure is not None or (expected is not None and received < expected):
        raise DownloadError(
            f"the download of {job.dest.name} was interrupted after {received} bytes"
            f" ({failure or 'connection closed early'}); run the same command again to resume it"
        )


def _copy(
    job: _Job, response: http.client.HTTPResponse, out: BinaryIO, received: int
) -> tuple[int, str | None]:
    """Append the body to ``out``; return the file length reached and why reading failed, if it did."""
    job.progress(received)
    while True:
        try:
            chunk = response.read(CHUNK_SIZE)
        except _NETWORK_ERRORS as exc:
            return received, _reason(exc)
        if not chunk:
            return received, None
        if job.size is not None and received + len(chunk) > job.size:
            _discard(job.part)
            raise DownloadError(
                f"cannot download {job.url}: the server sent more than the expected {job.size} bytes;"
                " discarded it"
            )
        out.write(chunk)
        received += len(chunk)
        job.progress(len(chunk))


def _install(job: _Job) -> None:
    """Rename the verified .part to dest, or delete it and raise if its sha256 is wrong."""
    digest = file_sha256(job.part)
    if digest != job.sha256:
        _discard(job.part)
        raise DownloadError(
            f"{job.dest.name} failed verification: its sha256 is {digest[:12]}..., expected"
            f" {job.sha256[:12]}...; the download was deleted"
        )
    try:
        os.replace(job.part, job.dest)
    except OSError as exc:
        raise DownloadError(f"cannot install {job.dest}: {exc.strerror or exc}") from exc
    fsync_directory(job.dest.parent)


def _length_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _discard(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _no_progress(_count: int) -> None:
    pass


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        return str(exc.reason)
    if isinstance(exc, TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__
