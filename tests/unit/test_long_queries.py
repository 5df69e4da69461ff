"""Reading a query's time words and quoted phrases takes time linear in its length: a pasted page
of text must not hang a search. Each reading runs in a child process with a generous deadline (a
hang, not a timing: the quadratic reading took minutes)."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: Far above the linear reading (well under a second) and far below the quadratic one (minutes).
DEADLINE_S = 20

READ = """
import sys
from datetime import datetime, timezone
from remem.core.search.phrases import of_query
from remem.core.search.query import read
query = {query}
reading = read(query, now=datetime(2026, 11, 30, tzinfo=timezone.utc)).window
print(reading.phrase if reading else None, len(of_query(query).required))
"""


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('"to monday " * 30_000', "None 0"),  # every weekday a plan: the word before each is looked up
        ('"note " * 30_000 + "to monday on Thursday"', "on Thursday 0"),
        ('"x" * 100_000 + " Thursday"', "Thursday 0"),
        ('"“" * 100_000 + " Thursday"', "Thursday 0"),  # opening quotation marks, never closed
        ('"「" * 100_000 + "「on Thursday」"', "on Thursday 1"),
    ],
)
@pytest.mark.slow
def test_a_very_long_query_is_read_in_linear_time(query: str, expected: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", READ.format(query=query)],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        check=True,
    )
    assert result.stdout.strip() == expected
