"""What the snippet of a long hit costs a search (``remem.core.snippets``).

    python bench/snippets.py [--size 2000000] [--short 2000] [--repeat 20]

Part 1 times ``snippet_of`` alone on a text of ``--size`` characters of ordinary words, for a
query whose words sit near its end, one that is common all over it, and one the text lacks (a hit
by meaning alone). Part 2 fills a local store (fake embedder: no model, so it measures the store
and the core) with ``--short`` short memories and one long one, and times keyword and hybrid
searches that find the long memory, with snippets and with them turned off (``LONG_TEXT`` raised
past the text), and a search that finds only short memories (where a snippet costs one ``len``).
Each figure is the median of ``--repeat`` runs, in milliseconds.
"""

from __future__ import annotations

import argparse
import functools
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import remem
from remem.core import snippets
from remem.testing import FakeEmbedder

WORDS = ["alpha", "beta", "gamma", "delta", "report", "status", "server", "queue", "worker", "build"]
NEEDLE = "the zanzibar vault key rotates on fridays"


def _median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def _long_text(size: int) -> str:
    chance = random.Random(1)
    filler = " ".join(chance.choice(WORDS) for _ in range(size // 6 + 1000))
    return f"{filler[: size - 1000]} {NEEDLE} {filler[:900]}"


def _alone(text: str, repeat: int) -> None:
    for label, query in [
        ("words near the end", "zanzibar vault"),
        ("a word all over it", "status report"),
        ("no word of it", "payments outage"),
    ]:
        terms = snippets.query_terms(query)
        took = _median_ms(functools.partial(snippets.snippet_of, text, terms), repeat)
        print(f"  snippet_of, {label:<20} {took:7.2f} ms")


def _in_searches(text: str, short: int, repeat: int) -> None:
    chance = random.Random(2)
    with tempfile.TemporaryDirectory() as home, remem.open(Path(home), embedder=FakeEmbedder()) as memories:
        memories.max_text_chars = max(memories.max_text_chars, len(text) + 1)
        memories.add_many([" ".join(chance.choices(WORDS, k=12)) + f" note {i}" for i in range(short)])
        memories.add(text)
        for mode in ("keyword", "hybrid"):
            search = functools.partial(memories.search, "zanzibar vault", mode=mode, k=5)
            assert any(hit.snippet for hit in search())
            with_snippet = _median_ms(search, repeat)
            kept, snippets.LONG_TEXT = snippets.LONG_TEXT, len(text)
            without = _median_ms(search, repeat)
            snippets.LONG_TEXT = kept
            print(f"  {mode:<7} search finding it: {with_snippet:7.2f} ms, without snippets {without:7.2f}")
        only_short = _median_ms(lambda: memories.search("status note", mode="keyword", k=5), repeat)
        print(f"  keyword search finding short memories only: {only_short:7.2f} ms")


def main() -> None:
    """Print the figures (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--size", type=int, default=2_000_000, help="characters of the long memory")
    parser.add_argument("--short", type=int, default=2_000, help="short memories beside it")
    parser.add_argument("--repeat", type=int, default=20, help="runs per figure (the median is shown)")
    args = parser.parse_args()
    text = _long_text(args.size)
    print(f"A memory of {len(text):,} characters:")
    _alone(text, args.repeat)
    print(f"In a local store with {args.short:,} short memories and that one:")
    _in_searches(text, args.short, args.repeat)


if __name__ == "__main__":
    main()
