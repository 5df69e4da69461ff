"""`remem stats`: its JSON object and its text, pinned field by field (the library's StoreStats
turns into exactly this)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_cli

RECORDS = [
    {"text": "one", "user": "ann", "conversation": "c1", "role": "user", "tags": ["b", "a"],
     "created_at": "2026-01-02T03:04:05.000Z"},
    {"text": "two", "user": "ann", "conversation": "c1", "role": "assistant", "tags": ["a"],
     "created_at": "2026-03-04T05:06:07.000Z"},
    {"text": "three", "created_at": "2025-12-31T23:59:59.000Z", "expires_at": "2020-01-01"},
]  # fmt: skip


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A local store of the three records above, embedded by the fake model."""
    place = tmp_path / "store"
    lines = "".join(json.dumps(record) + "\n" for record in RECORDS)
    assert run_cli(["add", "--jsonl", "-"], place, stdin=lines).code == 0
    return place


def test_stats_json_is_one_line_of_these_fields_in_this_order(store: Path) -> None:
    out = run_cli(["stats", "--json"], store).stdout
    size = json.loads(out)["disk_bytes"]
    assert isinstance(size, int) and size > 0
    assert out == (
        '{"memories":3,"vectors":3,"superseded":0,"expired":1,"oldest":"2025-12-31T23:59:59.000Z","newest":"2026-03-04T05:06:07.000Z",'
        '"model":"fake-bag-of-words (64-d, mean pooling)","index":"exact (0 tombstones)",'
        f'"index_setting":"auto","disk_bytes":{size},"by_user":{{"ann":2,"(none)":1}},'
        '"by_conversation":{"c1":2,"(none)":1},"by_tag":{"a":2,"b":1},'
        '"by_role":{"(none)":1,"assistant":1,"user":1}}\n'
    )


def test_stats_text_prints_a_line_a_field_and_the_counts_indented(store: Path) -> None:
    lines = run_cli(["stats"], store).stdout.splitlines()
    assert lines[:8] == [
        "memories:       3",
        "vectors:        3",
        "superseded:     0",
        "expired:        1",
        "oldest:         2025-12-31T23:59:59.000Z",
        "newest:         2026-03-04T05:06:07.000Z",
        "model:          fake-bag-of-words (64-d, mean pooling)",
        "index:          exact (0 tombstones)",
    ]
    assert lines[8] == "index_setting:  auto" and lines[9].startswith("disk_bytes:     ")
    assert lines[10:] == [
        "by_user:",
        f"  {'ann':<24} 2",
        f"  {'(none)':<24} 1",
        "by_conversation:",
        f"  {'c1':<24} 2",
        f"  {'(none)':<24} 1",
        "by_tag:",
        f"  {'a':<24} 2",
        f"  {'b':<24} 1",
        "by_role:",
        f"  {'(none)':<24} 1",
        f"  {'assistant':<24} 1",
        f"  {'user':<24} 1",
    ]
