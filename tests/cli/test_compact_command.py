"""`remem compact`: writes a lagging vector index file level with the database, and exits 0 at once
when there is nothing to do (for cron); --json says how many vectors it caught up."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import run_cli
from remem.backends.local.vectors_header import read_header


def test_compact_catches_the_index_file_up_and_then_has_nothing_to_do(store_dir: Path) -> None:
    assert run_cli(["add", "the first memory"], store_dir).code == 0
    generation = read_header(store_dir / "vectors.faiss")
    for text in ("a second memory", "a third memory"):
        assert run_cli(["add", text], store_dir).code == 0
    assert run_cli(["forget", "1"], store_dir).code == 0
    assert read_header(store_dir / "vectors.faiss") == generation  # the writes left the file alone
    done = run_cli(["compact", "--json"], store_dir)
    assert (
        done.code == 0
        and json.loads(done.stdout)["compacted"] == 3
        and json.loads(done.stdout)["keyword_heads"] == 0
    )
    header = read_header(store_dir / "vectors.faiss")
    assert header is not None and header["generation"] == 5
    again = run_cli(["compact"], store_dir)
    assert again.code == 0 and "Nothing to compact." in again.stderr
    assert run_cli(["doctor"], store_dir).code == 0


def test_compact_of_a_missing_store_fails_as_reindex_does(tmp_path: Path) -> None:
    compact, reindex = run_cli(["compact"], tmp_path / "none"), run_cli(["reindex"], tmp_path / "none")
    assert (compact.code, compact.stderr) == (reindex.code, reindex.stderr)
