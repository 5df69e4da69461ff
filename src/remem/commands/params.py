"""Typer's parameter coercion, made lazy: no pydantic for options that were not given; and its
help naming arguments as the usage lines of other tools do.

Typer 0.29 builds a pydantic ``TypeAdapter`` for every parameter of the command it runs before
looking at the value, importing pydantic and generating a schema for each: `remem list` used 0.41 s
of CPU without this and 0.21 s with it, `search` 0.44 s and 0.24 s (retired ``bench/typer_patch.py``,
medians of 20 fresh processes; `--help` coerces nothing and is the same either way). ``install()`` defers
that until a value actually needs coercing: a parameter left at None needs none, and a str, int or
float (or a list of str) for a parameter of that plain type, without a parser or bounds, is already
what the adapter would return. Every other value goes through Typer's own adapter, unchanged.

This reaches into Typer's private ``typer.core._TyperParameter.get_runtime_param`` and
``typer._coercion``: pyproject.toml pins Typer to the versions tested (0.29.x), and
``tests/unit/test_typer_patch.py`` fails when the patch no longer installs or when it coerces any
value of any remem parameter differently from Typer's own adapter. If Typer's internals are not the
expected ones at run time (another Typer installed by force), nothing is changed: slower, not wrong.

``plain_arguments()``: Typer 0.29 shows an argument's Python type in the help (``TEXT <list[str]>``,
``FILE <str>``) and a required one in braces in the usage line (``{ID}``). remem's arguments name
what they take in their metavar and help; the usage line is the familiar ``remem edit [OPTIONS] ID
[TEXT]...`` (``tests/cli/test_help_text.py``). Typer's ``TyperArgument`` is left as it is when it
has no such methods.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, get_args, get_origin

_INTEGER = re.compile(r"[+-]?[0-9]+")


def _plain(annotation: Any) -> Any:
    """X for Optional[X] (not for a list), else the annotation itself."""
    options = [arg for arg in get_args(annotation) if arg is not type(None)]
    if get_origin(annotation) is not list and len(options) == 1 and type(None) in get_args(annotation):
        return options[0]
    return annotation


def _ready(descriptor: Any, value: Any) -> tuple[bool, Any]:
    """(True, the value Typer's adapter would return) for the simple cases: a str, an int (also
    written in ASCII digits) or float within the bounds, an enum member or its exact value, a list
    of str — for a parameter of that plain type without a parser or file type; else (False, None)."""
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or info.parser is not None:
        return False, None
    annotation = _plain(descriptor.annotation)
    if annotation is int and type(value) is str and _INTEGER.fullmatch(value):
        value = int(value)
    if annotation in (int, float) and type(value) is annotation:
        low, high = getattr(info, "min", None), getattr(info, "max", None)
        return (low is None or value >= low) and (high is None or value <= high), value
    if isinstance(annotation, type) and issubclass(annotation, Enum) and type(value) is str:
        members = {str(member.value): member for member in annotation}
        return value in members, members.get(value)  # an exact value; anything else: Typer decides
    if annotation is str or (isinstance(annotation, type) and issubclass(annotation, Enum)):
        return isinstance(value, annotation), value
    if get_origin(annotation) is list and get_args(annotation) == (str,):
        return isinstance(value, list) and all(type(item) is str for item in value), value
    return False, None


def plain_arguments() -> bool:
    """Help without Python types for arguments, and usage lines without braces; True when done."""
    try:
        from typer.core import TyperArgument  # noqa: PLC0415
    except ImportError:
        return False
    if not all(hasattr(TyperArgument, name) for name in ("display_type_rich", "_usage_display_name")):
        return False

    def usage_name(self: Any) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")

    TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]
    TyperArgument._usage_display_name = usage_name  # type: ignore[method-assign]
    return True


def install() -> bool:
    """Make Typer build each parameter's pydantic adapter only when a value needs it; True when
    installed, False (nothing changed) when Typer's internals are not the ones this was made for."""
    try:
        from typer import core  # noqa: PLC0415
        from typer._coercion import RuntimeParam, build_runtime_param  # noqa: PLC0415
    except ImportError:
        return False
    parameter = getattr(core, "_TyperParameter", None)
    if parameter is None or not hasattr(parameter, "get_runtime_param"):
        return False

    @dataclass(frozen=True)
    class LazyRuntimeParam(RuntimeParam):
        descriptor: Any = None

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if isinstance(value, tuple) and get_origin(_plain(self.descriptor.annotation)) is list:
                value = list(value)
            ready, coerced = _ready(self.descriptor, value)
            if ready:
                return coerced
            return build_runtime_param(self.descriptor)._coerce_value(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            descriptor = self.type_descriptor
            self._runtime_param = LazyRuntimeParam(
                parameter_info=descriptor.parameter_info,
                annotation=descriptor.annotation,
                descriptor=descriptor,
            )
        return self._runtime_param

    parameter.get_runtime_param = get_runtime_param
    return True
