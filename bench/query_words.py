"""How long a search takes to read a very long query, and to find a quoted phrase in a big store.

    python bench/query_words.py [--memories 20000] [--deadline 600]

Part 1 reads pasted pages of text (time words, quoted phrases: ``remem.core.dates.read_dates`` and
``remem.core.phrases.of_query``), each in a child process stopped at ``--deadline`` seconds, so the
same script times code that reads them in quadratic time (run it with that code first on
PYTHONPATH). Part 2 fills a local store with ``--memories`` memories that all hold "rollback plan"
in a crowd of "plan the rollback" ones (fake embedder: no model, so it measures the store and the
core) and times a search for the quoted phrase and for the same words unquoted, in every mode.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import remem
from remem.testing import FakeEmbedder

QUERIES = {
    "'to monday ' × 4,000 (40k chars)": "'to monday ' * 4000",
    "'to monday ' × 10,000 (100k chars)": "'to monday ' * 10000",
    "'a ' × 50,000 + 'Thursday' (100k chars)": "'a ' * 50000 + 'Thursday'",
    "'“' × 100,000 (never closed)": "'“' * 100000",
}
READ = """
import time
from datetime import datetime, timezone
from remem.core.dates import read_dates
from remem.core.phrases import of_query
query = {query}
start = time.perf_counter()
read_dates(query, datetime(2026, 12, 1, tzinfo=timezone.utc))
of_query(query)
print(time.perf_counter() - start)
"""


def read_times(deadline: float) -> None:
    """Part 1: seconds to read each query (or 'over the deadline')."""
    print("| query | read in |\n|---|---:|")
    for name, query in QUERIES.items():
        try:
            out = subprocess.run(
                [sys.executable, "-c", READ.format(query=query)],
                capture_output=True,
                text=True,
                timeout=deadline,
                check=True,
            )
            shown = f"{float(out.stdout):.2f} s"
        except subprocess.TimeoutExpired:
            shown = f"> {deadline:.0f} s"
        print(f"| {name} | {shown} |", flush=True)


def phrase_times(count: int) -> None:
    """Part 2: a quoted phrase against the same words unquoted, in a store of ``count`` memories."""
    with tempfile.TemporaryDirectory() as tmp, remem.open(Path(tmp) / "store", embedder=FakeEmbedder()) as m:
        texts = [
            f"note {n}: the rollback plan for service {n % 97}"
            if n % 10 == 0
            else f"note {n}: plan the rollback of service {n % 97}"
            for n in range(count)
        ]
        m.add_many(texts)
        print(f"\n{count} memories, {count // 10} hold the phrase\n")
        print("| mode | query | hits | seconds |\n|---|---|---:|---:|")
        for mode in ("vector", "keyword", "hybrid"):
            for query in ('"rollback plan" service 5', "rollback plan service 5"):
                start = time.perf_counter()
                found = m.search(query, k=5, mode=mode, dates=False)
                seconds = time.perf_counter() - start
                print(f"| {mode} | `{query}` | {len(found)} | {seconds:.2f} |", flush=True)


def main() -> None:
    """Time both parts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--deadline", type=float, default=600.0)
    args = parser.parse_args()
    read_times(args.deadline)
    phrase_times(args.memories)


if __name__ == "__main__":
    main()
