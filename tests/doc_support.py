"""tools/doc_blocks.py for the tests (tools/ is not a package): which code blocks of the README and
docs/ run, how, and how their output is compared."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_PATH = Path(__file__).resolve().parents[1] / "tools" / "doc_blocks.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("doc_blocks", _PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["doc_blocks"] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


doc_blocks = sys.modules.get("doc_blocks") or _load()
