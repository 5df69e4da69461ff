"""The client snippets of docs/serve.md, as the tests run them: the lines and JSON blocks are read
from the page itself (so a test runs what a reader copies), with the page's example URL and token
placeholders replaced by a real server's URL and a real token."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from doc_support import doc_blocks

PAGE = Path(__file__).resolve().parents[1] / "docs" / "serve.md"
#: The URL the page's snippets show (a test's server listens on a free port instead).
DOC_URL = "http://127.0.0.1:8765/mcp"


def lines(prefix: str) -> list[str]:
    """The lines of the page's ```sh blocks that start with ``prefix``, in page order."""
    return [
        line
        for block in doc_blocks.blocks(PAGE)
        if block.lang == "sh"
        for line in block.code.splitlines()
        if line.startswith(prefix)
    ]


def line(prefix: str) -> str:
    """The one line of the page's ```sh blocks that starts with ``prefix``."""
    found = lines(prefix)
    assert len(found) == 1, f"{len(found)} lines of {PAGE.name} start with {prefix!r}"
    return found[0]


def json_config(containing: str) -> dict[str, Any]:
    """The one ```json block of the page whose text contains ``containing``, parsed."""
    found = [b.code for b in doc_blocks.blocks(PAGE) if b.lang == "json" and containing in b.code]
    assert len(found) == 1, f"{len(found)} JSON blocks of {PAGE.name} contain {containing!r}"
    parsed: dict[str, Any] = json.loads(found[0])
    return parsed


def argv(command: str, url: str, token: str) -> list[str]:
    """A shell line of the page as a process's arguments, for the server at ``url`` and ``token``
    (the page's ``$TOKEN``)."""
    assert DOC_URL in command and "$TOKEN" in command, command
    return [word.replace(DOC_URL, url).replace("$TOKEN", token) for word in shlex.split(command)]


def block(lang: str) -> str:
    """The one code block of the page in language ``lang`` (```nginx, ```caddyfile)."""
    found = [b.code for b in doc_blocks.blocks(PAGE) if b.lang == lang]
    assert len(found) == 1, f"{len(found)} {lang} blocks in {PAGE.name}"
    return found[0]
