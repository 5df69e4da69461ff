"""The vector index file carries a checksum (issue 15 #15; XXH3-128 of every byte before it since
issue 32, sha256 of the FAISS bytes before): a damaged block is caught on load — doctor reports it,
reindex and every reader rebuild it — instead of giving "cosines" in the millions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xxhash

from helpers import run_cli
from remem.backends.local.files import INDEX_FILE
from remem.backends.local.flat import ROWS_OFFSET
from remem.backends.local.vectors_header import MAGIC


@pytest.fixture
def four(store_dir: Path) -> Path:
    for text in ("alpha beta", "gamma delta", "epsilon zeta", "eta theta"):
        assert run_cli(["add", text], store_dir).code == 0
    return store_dir


def _damage_floats(store: Path) -> None:
    path = store / INDEX_FILE
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 64] = np.full(16, 1000.0, "<f4").tobytes()
    path.write_bytes(bytes(data))


def _scores(store: Path) -> list[float]:
    result = run_cli(["search", "--json", "--mode", "vector", "-k", "4", "alpha"], store)
    assert result.code == 0
    return [json.loads(line)["score"] for line in result.stdout.splitlines()]


def test_the_index_file_ends_with_its_checksum_and_its_vectors_start_on_a_cache_line(four: Path) -> None:
    data = (four / INDEX_FILE).read_bytes()
    assert (
        data.startswith(MAGIC)
        and data[-42:] == b"xxh3-128 " + xxhash.xxh3_128(data[:-42]).hexdigest().encode() + b"\n"
    )
    payload = data.index(b"\n", len(MAGIC)) + 1
    assert (payload + ROWS_OFFSET) % 64 == 0


def _fields(store: Path) -> tuple[bytes, bytes]:
    """(the header line, the FAISS bytes) of a version-3 index file."""
    data = (store / INDEX_FILE).read_bytes()[len(MAGIC) : -42]
    line, payload = data.split(b"\n", 1)
    return line + b"\n", payload


@pytest.mark.parametrize("where", ["header", "last byte", "truncated"])
def test_damage_anywhere_before_the_checksum_is_caught(four: Path, where: str) -> None:
    path = four / INDEX_FILE
    data = bytearray(path.read_bytes())
    if where == "header":  # the generation, a digit JSON still parses
        at = data.index(b'"generation":') + len(b'"generation":')
        data[at] = ord("9") if data[at] != ord("9") else ord("8")
    elif where == "last byte":  # the last id's top byte
        data[-43] ^= 0x01
    else:
        del data[-100:-42]
    path.write_bytes(bytes(data))
    found = run_cli(["doctor"], four)
    assert found.code == 2 and "vectors.faiss is damaged (its checksum does not match)" in found.stdout


def test_doctor_finds_a_damaged_block_and_repair_rebuilds_it(four: Path) -> None:
    _damage_floats(four)
    found = run_cli(["doctor"], four)
    assert found.code == 2 and "vectors.faiss is damaged (its checksum does not match)" in found.stdout
    assert run_cli(["doctor", "--repair"], four).code == 0
    assert all(-1.0 <= score <= 1.0 for score in _scores(four))


def test_reindex_does_not_call_a_damaged_index_current(four: Path) -> None:
    _damage_floats(four)
    result = run_cli(["reindex"], four)
    assert result.code == 0 and "vector index current" not in result.stderr
    assert run_cli(["doctor"], four).code == 0


def test_a_search_rebuilds_a_damaged_index_with_a_warning(four: Path) -> None:
    _damage_floats(four)
    result = run_cli(["search", "--json", "--mode", "vector", "-k", "4", "alpha"], four)
    assert result.code == 0 and "checksum does not match" in result.stderr
    assert all(-1.0 <= json.loads(line)["score"] <= 1.0 for line in result.stdout.splitlines())
    assert run_cli(["doctor"], four).code == 0
