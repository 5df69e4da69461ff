"""The code blocks of remem's Markdown (README.md and docs/*.md): which run, how, and their output.

    python tools/doc_blocks.py            # run every console block; exit 1 if an output differs
    python tools/doc_blocks.py --write    # run them and write the real output into the files
    python tools/doc_blocks.py --write --refresh docs/search.md   # also scores that drifted

A block is run unless the line right before it is ``<!-- not run: REASON -->`` (or the README's
``<!-- test-command -->``, the line .ci/run reads):

- ```python: run in one namespace per page, in order (tests/unit/test_doc_blocks.py, with the
  fake embedder);
- ```console: each ``$ COMMAND`` line runs in bash with the real bundled model, in a fresh home
  directory per page (the store is ``~/.local/share/remem``, as for a new user), blocks in order;
  the lines after it are its output, stdout and stderr as a terminal shows them. Outputs are
  compared with times, dates, decimal numbers (scores, durations) and sizes masked
  (tests/integration/test_doc_console.py);
- ```sh: run as one bash script in the same way; it must exit 0 (its output is not shown).

Every other block must be marked. ``--write`` changes only blocks whose masked output differs, so
regenerating leaves the files alone when nothing changed but times and scores; ``--refresh`` rewrites
those too (a page whose scores drifted: the test cannot see it, scores differ in the last digits
between machines).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_LANGS = ("python", "console", "sh")
_FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
_MARK = re.compile(r"<!-- (?:not run: (?P<reason>\S.*?)|(?P<test>test-command)) -->")
_MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d"), "<time>"),
    (re.compile(r"\d{4}-\d\d-\d\d"), "<date>"),
    (re.compile(r"(disk_bytes\W+)\d+"), r"\1<size>"),
    (re.compile(r"-?\d+(\.\d+)?e[-+]?\d+"), "<n>"),
    (re.compile(r"-?\d+\.\d+"), "<n>"),
    (re.compile(r"[ \t]+"), " "),
]


def pages() -> list[Path]:
    """The Markdown files whose blocks are run: the README, then docs/ in name order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int  # the line number of its first code line
    lang: str
    code: str
    start: int  # offsets of the code in the page's text
    end: int
    not_run: str | None  # why it is not run, when it is marked


def blocks(page: Path) -> list[Block]:
    """Every fenced block of a page, in order, with its not-run mark if the line before has one."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        mark = _MARK.fullmatch(before)
        reason = None if mark is None else (mark["reason"] or "the test command, run by .ci/run")
        line = text.count("\n", 0, match.start(2)) + 1
        found.append(Block(page, line, match[1], match[2], match.start(2), match.end(2), reason))
    return found


def mask(output: str) -> str:
    """The output with what changes from run to run (times, scores, sizes, spacing) masked."""
    lines = []
    for line in output.splitlines():
        masked = line
        for pattern, replacement in _MASKS:
            masked = pattern.sub(replacement, masked)
        lines.append(masked.strip())
    return "\n".join(lines).strip()


@dataclass(frozen=True)
class Step:
    """One ``$ command`` of a console block and the output the page shows for it."""

    command: str
    shown: str


def steps(code: str) -> list[Step]:
    """The commands of a console block, each with the lines after it."""
    found: list[Step] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            found.append(Step(line[2:], ""))
        elif not found:
            raise ValueError(f"a console block starts with output, not a $ command: {line!r}")
        else:
            found[-1] = Step(found[-1].command, found[-1].shown + line + "\n")
    return found


class Home:
    """A fresh home directory and environment in which `remem` is the checkout's code."""

    def __init__(self, root: Path) -> None:
        self.root = root
        shims = root / ".shims"
        (root / "home").mkdir(parents=True)
        shims.mkdir()
        for name, run in (("remem", f'"{sys.executable}" -m remem'), ("python", f'"{sys.executable}"')):
            shim = shims / name  # `remem` runs this checkout's code; `python` is the one running this
            shim.write_text(f'#!/bin/sh\nexec {run} "$@"\n', encoding="utf-8")
            shim.chmod(0o755)
        keep = {name: os.environ[name] for name in ("PATH", "SYSTEMROOT") if name in os.environ}
        self.home = root / "home"
        self.env = {
            **keep,
            "PATH": f"{shims}{os.pathsep}{keep.get('PATH', '/usr/bin:/bin')}",
            "PYTHONPATH": str(ROOT / "src"),
            "PYTHONUNBUFFERED": "1",  # stdout and stderr in the order a terminal shows them
            "HOME": str(self.home),
            "TZ": "UTC",
            "LANG": "C.UTF-8",
            "REMEM_HF_ENDPOINT": "http://127.0.0.1:9",  # never the network
        }

    def run(self, script: str) -> tuple[int, str]:
        """Run a bash script in the home directory: its exit code and its stdout+stderr."""
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=self.home,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=300,
            check=False,
        )
        output = done.stdout.decode("utf-8", "replace").replace(str(self.home), "~")
        return done.returncode, output


@dataclass(frozen=True)
class Outcome:
    """A run block: what the page shows and what the run printed."""

    block: Block
    shown: str
    printed: str

    @property
    def same(self) -> bool:
        """Whether they agree with times, scores and sizes masked."""
        return mask(self.shown) == mask(self.printed)


def run_page(page: Path) -> Iterator[Outcome]:
    """Run a page's console and sh blocks in order, in one fresh home directory."""
    with tempfile.TemporaryDirectory(prefix="remem-docs-") as scratch:
        home = Home(Path(scratch))
        for block in blocks(page):
            if block.not_run is not None or block.lang not in ("console", "sh"):
                continue
            if block.lang == "sh":
                code, output = home.run("set -euo pipefail\n" + block.code)
                yield Outcome(block, "exit 0", f"exit {code}" + ("" if code == 0 else f"\n{output}"))
                continue
            printed = ""
            for step in steps(block.code):
                printed += f"$ {step.command}\n" + home.run(step.command)[1]
            yield Outcome(block, block.code, printed)


def write(outcomes: list[Outcome], every: bool = False) -> int:
    """Put the printed output of every differing console block (``every``: of every console block
    whose output is not exactly the page's, such as a score that drifted under the mask) into its
    page; how many changed."""
    changed = [
        o for o in outcomes if o.block.lang == "console" and (not o.same or (every and o.printed != o.shown))
    ]
    for outcome in sorted(changed, key=lambda o: o.block.start, reverse=True):
        page = outcome.block.page
        text = page.read_text(encoding="utf-8")
        page.write_text(text[: outcome.block.start] + outcome.printed + text[outcome.block.end :], "utf-8")
    return len(changed)


def main() -> int:
    """Check (or with --write, regenerate) the console blocks of the README and docs/."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--write", action="store_true", help="write the real output into the pages")
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="with --write: rewrite every block whose output changed at all (scores, dates), not only "
        "those that differ with them masked",
    )
    parser.add_argument("pages", nargs="*", type=Path, help="default: README.md and docs/*.md")
    args = parser.parse_args()
    differing = 0
    for page in [p.resolve() for p in args.pages] or pages():
        outcomes = list(run_page(page))
        if args.write:
            count = write(outcomes, every=args.refresh)
            print(f"{page.relative_to(ROOT)}: {len(outcomes)} blocks run, {count} rewritten")
        for outcome in outcomes:
            if not outcome.same and (outcome.block.lang == "sh" or not args.write):
                differing += 1
                print(f"{page.relative_to(ROOT)}:{outcome.block.line}: differs; now:\n{outcome.printed}")
        if not args.write:
            print(f"{page.relative_to(ROOT)}: {len(outcomes)} blocks run")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
