"""A model file's sha256 is remembered only for the very bytes it was computed from: a file
rewritten in place (same size), replaced, or cut short is hashed again, and the bytes a session is
made from are always hashed themselves."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from remem.embedders.spec import file_sha256, verified_bytes
from remem.errors import EmbedderError


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_file_changed_in_place_is_hashed_again(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"a" * 4096)
    assert file_sha256(path) == _sha(b"a" * 4096)
    path.write_bytes(b"b" * 4096)  # same size, same inode, a newer mtime
    assert file_sha256(path) == _sha(b"b" * 4096)


def test_a_replaced_or_shortened_file_is_hashed_again(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"x" * 1000)
    assert file_sha256(path) == _sha(b"x" * 1000)
    other = tmp_path / "other"
    other.write_bytes(b"y" * 1000)
    os.replace(other, path)
    assert file_sha256(path) == _sha(b"y" * 1000)
    os.truncate(path, 10)
    assert file_sha256(path) == _sha(b"y" * 10)


def test_the_bytes_a_session_is_made_from_are_hashed_even_when_the_file_was_hashed_before(
    tmp_path: Path,
) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"good bytes")
    good = file_sha256(path)
    assert verified_bytes(path, good) == b"good bytes"
    stat = path.stat()
    path.write_bytes(b"evil bytes")  # the same size, and the old times put back
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(EmbedderError, match="is damaged or not the file it should be"):
        verified_bytes(path, good)
