"""`remem token add --output FILE` (issue 53 #2): the token goes into a new file only its owner can
read (0600), never into one that exists; a token that could not be made leaves no file behind.
(`remem token add … > alice.token` leaves the token as readable as the shell's umask makes it.)"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import remem
from helpers import run_cli
from remem.testing import FakeEmbedder


def _verified(store: Path, token: str) -> remem.Token | None:
    with remem.open(store, embedder=FakeEmbedder()) as memories:
        return memories.tokens.verify(token)


def test_the_token_goes_into_a_new_file_readable_by_its_owner_only(store_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "alice.token"
    made = run_cli(["token", "add", "--user", "alice", "--output", str(target)], store_dir)
    assert (made.code, made.stdout) == (0, ""), made.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    token = target.read_text(encoding="utf-8")
    assert token.endswith("\n") and token.count("\n") == 1
    found = _verified(store_dir, token.strip())
    assert found is not None and found.user == "alice"


def test_json_names_the_file_not_the_token(store_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "bob.token"
    made = run_cli(["token", "add", "--user", "bob", "-o", str(target), "--json"], store_dir)
    assert made.code == 0, made.stderr
    record = json.loads(made.stdout)
    assert "token" not in record and (record["output"], record["user"]) == (str(target), "bob")
    assert target.read_text(encoding="utf-8").strip() not in made.stdout


def test_an_existing_file_or_link_is_never_written(store_dir: Path, tmp_path: Path) -> None:
    kept = tmp_path / "notes.txt"
    kept.write_text("mine\n", encoding="utf-8")
    link = tmp_path / "link.token"
    link.symlink_to(tmp_path / "elsewhere")
    for target in (kept, link):
        refused = run_cli(["token", "add", "--user", "alice", "--output", str(target)], store_dir)
        assert refused.code == 2
        assert refused.stderr == f"Error: --output {target} exists: a token goes only into a new file\n"
    assert kept.read_text(encoding="utf-8") == "mine\n" and not (tmp_path / "elsewhere").exists()
    assert not store_dir.exists()  # nothing made: no token, no store


def test_a_token_that_is_not_made_leaves_no_file(store_dir: Path, tmp_path: Path) -> None:
    assert run_cli(["token", "add", "--user", "alice"], store_dir).code == 0
    target = tmp_path / "again.token"
    refused = run_cli(["token", "add", "--user", "bob", "--name", "alice", "-o", str(target)], store_dir)
    assert refused.code == 2, refused.stderr
    assert not target.exists()
