"""Every command on a PostgreSQL store, and a store moved from local to PostgreSQL and back."""

from __future__ import annotations

import json
from pathlib import Path

import remem
from helpers import run_cli

MEMORIES = [
    {"text": "The checkout screen moved to the pricing page layout", "user": "ann", "tags": ["ui"]},
    {"text": "Deploy 9f3c2ab1d4e5 was rolled back after error E1045", "user": "bob", "tags": ["ops"]},
    {"text": "Bob prefers tabs over spaces", "user": "bob", "conversation": "c1", "role": "user"},
    {"text": "Ann owns the billing service", "user": "ann", "meta": {"team": "payments"}},
]


def _jsonl(records: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _ids(outcome_stdout: str) -> list[int]:
    return [json.loads(line)["id"] for line in outcome_stdout.splitlines()]


def test_every_command_works_on_a_postgres_store(postgres_url: str) -> None:
    url = postgres_url
    added = run_cli(["add", "--jsonl", "-", "--json"], url, stdin=_jsonl(MEMORIES))
    assert added.code == 0, added.stderr
    ids = json.loads(added.stdout)["added"]
    assert len(ids) == 4
    assert run_cli(["add", "a single memory from the arguments"], url).stdout.strip().isdigit()
    assert run_cli(["add", "-"], url, stdin="one from stdin\n").code == 0
    assert run_cli(["add", "--lines", "-"], url, stdin="line one\nline two\n").code == 0
    again = run_cli(["add", "Bob prefers tabs over spaces", "-u", "bob", "-c", "c1"], url)
    assert again.code == 0 and int(again.stdout.split()[0]) == ids[2]  # a duplicate: the same id

    for mode in ("vector", "keyword", "hybrid"):
        found = run_cli(["search", "--json", "--mode", mode, "-k", "1", "E1045 rolled back deploy"], url)
        assert found.code == 0 and _ids(found.stdout) == [ids[1]], (mode, found)
    only_ann = run_cli(["search", "--json", "-u", "ann", "billing service"], url)
    assert set(_ids(only_ann.stdout)) <= {ids[0], ids[3]} and ids[3] in _ids(only_ann.stdout)
    by_meta = run_cli(["search", "--json", "--meta", "team=payments", "service"], url)
    assert _ids(by_meta.stdout) == [ids[3]]
    by_hash = run_cli(["search", "--json", "--mode", "keyword", "9f3c2ab"], url)
    assert _ids(by_hash.stdout) == [ids[1]]

    listed = run_cli(["list", "--json", "--tag", "ops"], url)
    assert _ids(listed.stdout) == [ids[1]]
    shown = run_cli(["show", str(ids[0]), "--json"], url)
    assert json.loads(shown.stdout)["tags"] == ["ui"]
    assert run_cli(["edit", str(ids[0]), "The checkout screen now lives on the pricing page"], url).code == 0
    assert "now lives" in run_cli(["show", str(ids[0])], url).stdout
    dry = run_cli(["forget", "--where", "--user", "bob", "--dry-run", "--json"], url)
    assert sorted(_ids(dry.stdout)) == sorted([ids[1], ids[2]])
    assert run_cli(["forget", str(ids[2])], url).code == 0
    assert run_cli(["show", str(ids[2])], url).code == 1
    context = run_cli(["context", "pricing"], url)
    assert context.code == 0 and "pricing page" in context.stdout

    stats = json.loads(run_cli(["stats", "--json"], url).stdout)
    assert stats["memories"] == 7 and stats["vectors"] == 7 and stats["index"].startswith("pgvector hnsw")
    assert run_cli(["reindex", "--index", "exact"], url).code == 0
    assert json.loads(run_cli(["stats", "--json"], url).stdout)["index"] == "exact scans"
    assert run_cli(["reindex", "--index", "hnsw", "--hnsw-m", "8", "--force"], url).code == 0
    doctor = run_cli(["doctor"], url)
    assert doctor.code == 0 and "hnsw (m=8" in doctor.stdout, doctor.stdout + doctor.stderr
    exported = run_cli(["export"], url)
    assert len(exported.stdout.splitlines()) == 7


def _varied(store: Path) -> None:
    records = [
        *MEMORIES,
        {"text": "an old one", "created_at": "2024-01-01T00:00:00Z", "meta": {"k": "1", "ü": "ß"}},
        {"text": "long " + " ".join(f"word{i}" for i in range(600))},  # several windows
    ]
    assert run_cli(["add", "--jsonl", "-"], store, stdin=_jsonl(records)).code == 0
    assert run_cli(["forget", "2"], store).code == 0  # a gap in the ids
    assert run_cli(["edit", "3", "Bob prefers tabs over spaces (edited)"], store).code == 0


def test_a_local_store_moved_to_postgres_and_back_exports_identically(
    postgres_url: str, tmp_path: Path
) -> None:
    local, back = tmp_path / "local", tmp_path / "back"
    _varied(local)
    for flags in ([], ["--with-vectors"]):
        original = run_cli(["export", *flags], local).stdout
        target = f"{postgres_url}{len(flags)}"  # a schema of its own for each round
        assert run_cli(["import", "-"], target, stdin=original).code == 0
        on_server = run_cli(["export", *flags], target).stdout
        assert on_server == original
        returned = back / str(len(flags))
        assert run_cli(["import", "-"], returned, stdin=on_server).code == 0
        assert run_cli(["export", *flags], returned).stdout == original
        found = run_cli(["search", "--json", "-k", "1", "word599 word598"], target)
        assert json.loads(found.stdout)["text"].startswith("long ")


def test_tokens_on_a_postgres_store(postgres_url: str) -> None:
    made = run_cli(["token", "add", "--user", "ann", "--read-only"], postgres_url)
    assert made.code == 0 and made.stdout.startswith("remem_"), made.stderr
    secret = made.stdout.strip()
    listed = run_cli(["token", "list", "--json"], postgres_url)
    assert [json.loads(line)["name"] for line in listed.stdout.splitlines()] == ["ann"]
    assert secret not in listed.stdout
    with remem.open(postgres_url, create=False) as memories:
        token = memories.tokens.verify(secret)
        assert token is not None and (token.user, token.read_only) == ("ann", True)
        assert run_cli(["token", "revoke", "ann"], postgres_url).code == 0
        assert memories.tokens.verify(secret) is None  # the same Memories, at its next call
    assert run_cli(["token", "revoke", "ann"], postgres_url).code == 1
