"""Importing a chat history: `remem import --from chatgpt` of a generated ChatGPT-shaped export,
embedded with the bundled model, vs `remem add --jsonl` of the same turns (the baseline).

    python bench/history.py [--messages 100000] [--runs 1] [--fake-model] [--quick]

The export (``remem.testing.write_chatgpt_export``: conversations of 40 user and assistant
messages of 15-20 words, a minute apart) is written to a temporary file; the same turns (text,
conversation, role, created_at) are written as JSON Lines. Each is ingested by a fresh `remem`
process into an empty local store, one after the other: wall time, messages per second, and the
process's peak resident memory (``wait4``); with ``--runs N``, N rounds interleaved and the median
(a loaded machine drifts). The import streams the export (ijson, one conversation at a time) and
stages it in batches; the targets are 1,000 messages/s and 500 MB at 100,000. ``--fake-model``
embeds with remem.testing's fake model of the bundled one's width (384: vectors as big, no
embedding time): what the import costs beyond the model, and its memory, at any size in minutes.

With the bundled model a last row is the upper bound: the model alone (a fresh process too, the
model loaded and warmed before the clock starts), embedding each turn's document as the import
builds it (its line, then the two turns before it) in calls of 2,048; the note above the table
gives the tokens per document and per message alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import _harness
from remem.testing import write_chatgpt_export


def turns_of(export: Path) -> Iterator[dict[str, str]]:
    """The export's turns as the JSON records `add --jsonl` reads, in conversation order."""
    for conversation in json.loads(export.read_text(encoding="utf-8")):
        for node in conversation["mapping"].values():
            message = node.get("message")
            if message is None:
                continue
            moment = datetime.fromtimestamp(message["create_time"], tz=timezone.utc)
            yield {
                "text": message["content"]["parts"][0],
                "conversation": conversation["conversation_id"],
                "role": message["author"]["role"],
                "created_at": moment.isoformat(),
            }


def jsonl_of(export: Path, target: Path) -> int:
    """Write the export's turns as the JSON lines `add --jsonl` reads; how many."""
    count = 0
    with target.open("w", encoding="utf-8") as out:
        for record in turns_of(export):
            out.write(json.dumps(record) + "\n")
            count += 1
    return count


def documents_of(export: Path) -> tuple[list[str], list[str]]:
    """(each turn's document as an import embeds it: its "role: text" line, then the lines of the
    two turns before it in its conversation, a minute apart; each message's line alone)."""
    documents: list[str] = []
    lines: list[str] = []
    conversation = None
    for record in turns_of(export):
        if record["conversation"] != conversation:
            conversation, before = record["conversation"], []
        lines.append(f"{record['role']}: {record['text']}")
        documents.append("\n".join([lines[-1], *before[-2:]]))
        before.append(lines[-1])
    return documents, lines


def model_alone(export: Path) -> None:
    """``--model-alone``'s child: the bundled model alone on the turns' documents, loaded and warmed
    first, in calls of 2,048; prints JSON: the seconds, this process's peak RSS, and a note of the
    tokens per document and per message alone."""
    import remem

    embedder = remem.model_catalog().load("all-minilm-l6-v2", verify=True)
    embedder.embed_documents(["warm up"])
    documents, lines = documents_of(export)
    started = time.perf_counter()
    for start in range(0, len(documents), 2048):
        embedder.embed_documents(documents[start : start + 2048])
    seconds = time.perf_counter() - started
    count = _harness.tokens_per_text(embedder.files.tokenizer)
    note = (
        f"tokens per document (a turn and the two before it) {statistics.mean(count(documents)):.1f}, "
        f"per message alone {statistics.mean(count(lines)):.1f}"
    )
    print(json.dumps({"seconds": seconds, "peak": _harness.peak_rss_mb(), "note": note}))


def run_alone(export: Path) -> tuple[float, float, str]:
    """Run ``model_alone`` in a fresh process: (seconds, its peak RSS MB, the tokens note)."""
    found = subprocess.run(
        [sys.executable, __file__, "--model-alone", str(export)], check=True, capture_output=True, text=True
    )
    answer = json.loads(found.stdout)
    return answer["seconds"], answer["peak"], answer["note"]


#: The last row's name (with the bundled model).
ALONE = "the model alone on the same documents, loaded first (upper bound)"

#: ``--fake-model``'s child: the CLI with a fake model of the bundled one's width.
FAKE_CHILD = """
import sys
import remem
from remem.cli import main
from remem.testing import FakeEmbedder

model = remem.ModelInfo(name="fake-384", dim=384, pooling="mean", sha256="f" * 64)
sys.exit(main(sys.argv[1:], embedder=FakeEmbedder(model)))
"""


def run(args: list[str], store: Path, fake: bool) -> tuple[float, float]:
    """Run ``remem -q ARGS --store STORE`` to its end: (seconds, peak RSS MB of that process)."""
    command = [sys.executable, "-c", FAKE_CHILD] if fake else [_harness.remem_command()]
    started = time.perf_counter()
    proc = subprocess.Popen([*command, "-q", *args, "--store", str(store)], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"remem {' '.join(args)} failed")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    """Write the export and its JSON lines, ingest each, print the table."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--messages", type=int, help="messages in the export (default 100,000; 1,000 quick)")
    parser.add_argument("--runs", type=int, default=1, help="interleaved rounds (the median of each)")
    parser.add_argument("--fake-model", action="store_true", help="a fake model of the bundled one's width")
    parser.add_argument("--model-alone", type=Path, help=argparse.SUPPRESS)  # the child of run_alone
    args = parser.parse_args()
    if args.model_alone:
        model_alone(args.model_alone)
        return
    messages = args.messages or (1_000 if args.quick else 100_000)
    print(_harness.machine())
    with tempfile.TemporaryDirectory() as tmp:
        export, lines = Path(tmp) / "conversations.json", Path(tmp) / "turns.jsonl"
        write_chatgpt_export(export, messages)
        assert jsonl_of(export, lines) == messages
        _harness.note(f"export: {export.stat().st_size / 1e6:.1f} MB, {messages:,} messages")
        commands = {
            "`add --jsonl` of the same turns (baseline)": ["add", "--jsonl", str(lines)],
            "`import --from chatgpt`": ["import", "--from", "chatgpt", str(export)],
        }
        measured: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        alone: list[tuple[float, float]] = []
        for round_ in range(args.runs):  # interleaved so that drift hits every row
            for name, command in commands.items():
                _harness.note(f"round {round_ + 1}: {name}…")
                store = Path(tmp) / f"store-{round_}-{len(measured[name])}-{len(name)}"
                measured[name].append(run(command, store, args.fake_model))
                shutil.rmtree(store)
            if not args.fake_model:
                _harness.note(f"round {round_ + 1}: the model alone…")
                seconds, peak, tokens = run_alone(export)
                alone.append((seconds, peak))
        if alone:
            _harness.note(tokens)
            measured[ALONE] = alone
    rows = [
        (name, statistics.median(s for s, _ in runs), max(peak for _, peak in runs))
        for name, runs in measured.items()
    ]
    base = rows[0][1]
    model = "a fake model" if args.fake_model else "bundled model"
    _harness.table(
        ["what", "seconds", "messages/s", "× baseline time", "peak RSS MB"],
        [
            (name, f"{s:.1f}", f"{messages / s:,.0f}", _harness.times(s, base), f"{peak:.0f}")
            for name, s, peak in rows
        ],
        f"{messages:,} messages in conversations of 40, {model}, a fresh process each, median of {args.runs}",
    )


if __name__ == "__main__":
    main()
