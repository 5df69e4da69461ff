"""Modules imported when first used: what a short command such as ``remem list`` never touches should
not cost it the import (building a frozen dataclass alone takes half a millisecond)."""

from __future__ import annotations

import importlib
from typing import Any


class Later:
    """Stands for the module ``name``: the first attribute read imports it (Python's import lock
    makes that safe from several threads), every read returns the module's attribute."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        """Name the module; nothing is imported yet."""
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported when first used>"
