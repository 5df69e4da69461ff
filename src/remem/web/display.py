"""How the page shows memories: Jinja2 templates with autoescape on, and the filters they use.

Memories are untrusted text written by assistants. Every value reaches the HTML through Jinja2's
autoescape (never ``|safe``); no text is ever turned into a link (a ``javascript:`` text stays text);
each memory text sits in ``<bdi dir="auto">`` so that bidi overrides in it stay inside it; control
characters are shown as visible symbols (``visible``); lists show a long text's snippet or its start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

HERE = Path(__file__).parent
#: How many characters of a memory a list shows (the memory's page shows it whole).
LIST_CHARS = 400
#: C0 controls (but tab and newline) as their Unicode control pictures; DEL, C1 controls and the
#: bidi controls as their code points, so that none acts on the page or hides.
_PICTURES = {code: chr(0x2400 + code) for code in range(0x20) if chr(code) not in "\t\n"}
_PICTURES[0x7F] = "\u2421"
_CODES = {code: f"<U+{code:04X}>" for code in (*range(0x80, 0xA0), 0x200E, 0x200F, 0x061C)}
_CODES.update({code: f"<U+{code:04X}>" for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))})
_VISIBLE = str.maketrans({**_PICTURES, **_CODES})


def visible(text: object) -> str:
    """``text`` with its control characters (tab and newline aside) and bidi controls shown as
    visible symbols; a carriage return before a newline goes (Windows line ends)."""
    return str(text).replace("\r\n", "\n").translate(_VISIBLE)


def start(text: str, limit: int = LIST_CHARS) -> str:
    """The first ``limit`` characters of ``text`` (ending in … when cut)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def environment() -> jinja2.Environment:
    """The templates, autoescaped, strict about undefined names, with the filters above."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["visible"] = visible
    env.filters["start"] = start
    return env


class Renderer:
    """Renders the page's templates (loaded once)."""

    def __init__(self) -> None:
        """Load the environment."""
        self.env = environment()

    def render(self, name: str, **values: Any) -> str:
        """The HTML of template ``name`` with ``values``."""
        return self.env.get_template(name).render(**values)


def stylesheet() -> bytes:
    """The page's one stylesheet (served by the app: no inline style, nothing from elsewhere)."""
    return (HERE / "static" / "remem.css").read_bytes()
