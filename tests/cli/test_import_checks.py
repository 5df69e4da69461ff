"""What an import may carry (issue 15 #13, #14): a vector that is not a unit vector is embedded
again (and doctor finds one in a store), an id out of range is a bad line."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from helpers import run_cli
from remem.testing import FAKE_DIM, fake_vector


def _exported(store: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in run_cli(["export", "--with-vectors"], store).stdout.splitlines()]


@pytest.mark.parametrize("damage", ["scaled", "nan"])
def test_an_imported_vector_that_is_not_a_unit_vector_is_embedded_again(
    small: Path, tmp_path: Path, damage: str
) -> None:
    records = _exported(small)
    vector = fake_vector(str(records[0]["text"])) * (1000.0 if damage == "scaled" else np.nan)
    records[0]["vector"]["float32_base64"] = base64.b64encode(vector.astype("<f4").tobytes()).decode()  # type: ignore[index]
    target = tmp_path / "copy"
    data = "".join(json.dumps(record) + "\n" for record in records)
    imported = run_cli(["import", "--json", "-"], target, stdin=data)
    assert imported.code == 0 and "2 vectors reused" in imported.stderr
    hits = [
        json.loads(line)
        for line in run_cli(
            ["search", "--json", "--mode", "vector", "-k", "3", "x"], target
        ).stdout.splitlines()
    ]
    assert all(-1.0 <= float(hit["score"]) <= 1.0 for hit in hits)  # type: ignore[arg-type]
    assert run_cli(["doctor"], target).code == 0


def test_doctor_finds_vectors_that_are_not_unit_length(small: Path) -> None:
    import sqlite3

    with sqlite3.connect(small / "memories.sqlite3") as conn:
        conn.execute("UPDATE vectors SET vector = ? WHERE id = 1", (np.full(FAKE_DIM, 3.0, "<f4").tobytes(),))
    result = run_cli(["doctor"], small)
    assert result.code == 2 and "1 vectors not finite or not of unit length" in result.stdout


@pytest.mark.parametrize("memory_id", [9223372036854775807, 9223372036854775808, 2**53, 0, -3])
def test_an_imported_id_out_of_range_is_a_bad_line(store_dir: Path, memory_id: int) -> None:
    line = json.dumps({"id": memory_id, "text": "from another store"}) + "\n"
    refused = run_cli(["import", "-"], store_dir, stdin=line)
    assert refused.code == 2
    assert "line 1: id must be a positive integer up to 9007199254740991" in refused.stderr
    skipped = run_cli(["import", "--skip-invalid", "-"], store_dir, stdin=line)
    assert skipped.code == 0 and "skipped 1" in skipped.stderr
    assert run_cli(["add", "a later memory"], store_dir).code == 0  # ids still come


def test_the_largest_id_an_import_may_carry_leaves_room_for_more(store_dir: Path) -> None:
    line = json.dumps({"id": 2**53 - 1, "text": "from another store"}) + "\n"
    assert run_cli(["import", "-"], store_dir, stdin=line).code == 0
    assert run_cli(["add", "a later memory"], store_dir).stdout.strip() == str(2**53)
