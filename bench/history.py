"""Importing a chat history: `remem import --from chatgpt` of a generated ChatGPT-shaped export,
embedded with the bundled model, vs `remem add --jsonl` of the same turns (the baseline).

    python bench/history.py [--messages 100000] [--quick]

The export (``remem.testing.write_chatgpt_export``: conversations of 40 user and assistant
messages of 15-20 words, a minute apart) is written to a temporary file; the same turns (text,
conversation, role, created_at) are written as JSON Lines. Each is ingested by a fresh `remem`
process into an empty local store, one after the other: wall time, messages per second, and the
process's peak resident memory (``wait4``). The import streams the export (ijson, one conversation
at a time) and stages it in batches; the targets are 1,000 messages/s and 500 MB at 100,000.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import _harness
from remem.testing import write_chatgpt_export


def jsonl_of(export: Path, target: Path) -> int:
    """Write the export's turns as the JSON lines `add --jsonl` reads; how many."""
    count = 0
    with target.open("w", encoding="utf-8") as out:
        for conversation in json.loads(export.read_text(encoding="utf-8")):
            for node in conversation["mapping"].values():
                message = node.get("message")
                if message is None:
                    continue
                moment = datetime.fromtimestamp(message["create_time"], tz=timezone.utc)
                record = {
                    "text": message["content"]["parts"][0],
                    "conversation": conversation["conversation_id"],
                    "role": message["author"]["role"],
                    "created_at": moment.isoformat(),
                }
                out.write(json.dumps(record) + "\n")
                count += 1
    return count


def run(args: list[str], store: Path) -> tuple[float, float]:
    """Run ``remem -q ARGS --store STORE`` to its end: (seconds, peak RSS MB of that process)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [_harness.remem_command(), "-q", *args, "--store", str(store)], stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"remem {' '.join(args)} failed")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    """Write the export and its JSON lines, ingest each, print the table."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--messages", type=int, help="messages in the export (default 100,000; 1,000 quick)")
    args = parser.parse_args()
    messages = args.messages or (1_000 if args.quick else 100_000)
    print(_harness.machine())
    with tempfile.TemporaryDirectory() as tmp:
        export, lines = Path(tmp) / "conversations.json", Path(tmp) / "turns.jsonl"
        write_chatgpt_export(export, messages)
        assert jsonl_of(export, lines) == messages
        _harness.note(f"export: {export.stat().st_size / 1e6:.1f} MB, {messages:,} messages")
        rows = []
        for name, command in (
            ("`add --jsonl` of the same turns (baseline)", ["add", "--jsonl", str(lines)]),
            ("`import --from chatgpt`", ["import", "--from", "chatgpt", str(export)]),
        ):
            _harness.note(f"{name}…")
            seconds, peak = run(command, Path(tmp) / f"store-{len(rows)}")
            rows.append((name, seconds, peak))
    base = rows[0][1]
    _harness.table(
        ["what", "seconds", "messages/s", "× baseline time", "peak RSS MB"],
        [
            (name, f"{s:.1f}", f"{messages / s:,.0f}", _harness.times(s, base), f"{peak:.0f}")
            for name, s, peak in rows
        ],
        f"{messages:,} messages in conversations of 40, bundled model, a fresh process each",
    )


if __name__ == "__main__":
    main()
