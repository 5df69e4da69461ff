"""A hit on a 2 MB memory (issue 26 #5): the table shows the part that matched, cut at both ends
with …, never the 2 MB; ``--json`` keeps the whole text and adds ``snippet`` with its offsets."""

from __future__ import annotations

import json
import random
from pathlib import Path

from helpers import run_cli

NEEDLE = "the zanzibar vault key rotates on fridays"
WORDS = ["alpha", "beta", "gamma", "delta", "report", "status", "queue", "build", "plan"]


def _two_megabytes() -> str:
    chance = random.Random(5)
    filler = " ".join(chance.choice(WORDS) for _ in range(340_000))
    return f"{filler[:1_999_000]} {NEEDLE} {filler[:900]}"


def test_a_hit_on_a_2_mb_memory_prints_its_snippet_not_its_text(store_dir: Path) -> None:
    text = _two_megabytes()
    assert run_cli(["add", "--max-chars", "3000000", "-"], store_dir, stdin=text).code == 0
    assert run_cli(["add", "a short note on the zanzibar vault"], store_dir).code == 0

    table = run_cli(["search", "zanzibar vault"], store_dir)
    assert table.code == 0 and len(table.stdout) < 1_000  # a pipe: nothing is clipped to a width
    (long_row,) = [line for line in table.stdout.splitlines() if NEEDLE in line]
    cell = long_row.split("  ")[-1]
    assert cell.startswith("…") and cell.endswith("…")  # the text goes on before and after the snippet
    assert "a short note on the zanzibar vault" in table.stdout  # short texts whole, no …

    lines = run_cli(["search", "--json", "zanzibar vault"], store_dir).stdout.splitlines()
    records = {record["id"]: record for record in map(json.loads, lines)}
    whole, short = records[1], records[2]
    assert whole["text"] == text and short["snippet"] is None
    snippet = whole["snippet"]
    assert set(snippet) == {"text", "start", "end"} and NEEDLE in snippet["text"]
    assert text[snippet["start"] : snippet["end"]] == snippet["text"]
    assert snippet["start"] > 1_990_000
