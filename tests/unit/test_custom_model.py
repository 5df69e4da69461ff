"""A user's own model directory: its description is validated and its files are hashed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from remem.embedders.custom import DESCRIPTION_FILE, load_model_dir
from remem.embedders.spec import Pooling, file_sha256
from remem.errors import EmbedderError


def _model_dir(tmp_path: Path, description: Any, name: str = "mine") -> Path:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "model.onnx").write_bytes(b"onnx bytes")
    (directory / "tokenizer.json").write_text("{}")
    text = description if isinstance(description, str) else json.dumps(description)
    (directory / DESCRIPTION_FILE).write_text(text)
    return directory


def test_a_complete_description_becomes_a_spec_with_hashed_files(tmp_path: Path) -> None:
    prefix = "query: "
    directory = _model_dir(
        tmp_path, {"name": "e5-mine", "dim": 384, "pooling": "cls", "max_tokens": 512, "query_prefix": prefix}
    )
    spec, files = load_model_dir(directory)
    assert (spec.name, spec.dim, spec.pooling, spec.max_tokens, spec.query_prefix) == (
        "e5-mine",
        384,
        Pooling.CLS,
        512,
        prefix,
    )
    assert spec.model_sha256 == file_sha256(files.model)
    assert spec.model.size == len(b"onnx bytes")
    assert not spec.downloadable


def test_defaults_name_window_and_prefix(tmp_path: Path) -> None:
    spec, _ = load_model_dir(_model_dir(tmp_path, {"dim": 8, "pooling": "mean"}, name="small-one"))
    assert (spec.name, spec.max_tokens, spec.query_prefix, spec.languages) == ("small-one", 512, "", ())
    assert spec.document_window == 512


def test_a_model_may_window_stored_texts_shorter_than_queries(tmp_path: Path) -> None:
    description = {"dim": 8, "pooling": "mean", "max_tokens": 256, "document_tokens": 128}
    spec, _ = load_model_dir(_model_dir(tmp_path, description))
    assert (spec.max_tokens, spec.document_window) == (256, 128)


def test_a_model_may_declare_its_languages(tmp_path: Path) -> None:
    spec, _ = load_model_dir(_model_dir(tmp_path, {"dim": 8, "pooling": "mean", "languages": ["EN", "zh"]}))
    assert spec.languages == ("en", "zh")


@pytest.mark.parametrize(
    ("description", "message"),
    [
        ("not json", "cannot read"),
        ([1, 2], "JSON object"),
        ({"pooling": "cls"}, "dim is required"),
        ({"dim": "384", "pooling": "cls"}, "dim must be an integer"),
        ({"dim": True, "pooling": "cls"}, "dim must be an integer"),
        ({"dim": 384, "pooling": "max"}, "pooling must be one of"),
        ({"dim": 384, "pooling": "cls", "max_tokens": 2}, "max_tokens must be an integer"),
        ({"dim": 384, "pooling": "cls", "max_tokens": 256, "document_tokens": 512}, "from 8 to 256"),
        ({"dim": 384, "pooling": "cls", "document_tokens": 4}, "document_tokens must be an integer"),
        ({"dim": 384, "pooling": "cls", "query_prefix": 3}, "query_prefix must be a string"),
        ({"dim": 384, "pooling": "cls", "normalize": True}, "unknown fields"),
        ({"dim": 384, "pooling": "cls", "languages": "en"}, "languages must be a list"),
        ({"dim": 384, "pooling": "cls", "languages": [""]}, "languages must be a list"),
        ({"dim": 384, "pooling": "cls", "name": "bge-small-en-v1.5"}, "taken by a built-in"),
        ({"dim": 384, "pooling": "cls", "name": "has space"}, "without spaces"),
    ],
)
def test_a_bad_description_is_named(tmp_path: Path, description: Any, message: str) -> None:
    with pytest.raises(EmbedderError, match=message):
        load_model_dir(_model_dir(tmp_path, description))


@pytest.mark.parametrize("missing", ["model.onnx", "tokenizer.json", DESCRIPTION_FILE])
def test_a_missing_file_is_named(tmp_path: Path, missing: str) -> None:
    directory = _model_dir(tmp_path, {"dim": 8, "pooling": "mean"})
    (directory / missing).unlink()
    with pytest.raises(EmbedderError, match=f"has no {missing}"):
        load_model_dir(directory)
