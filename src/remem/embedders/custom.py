"""A user's own model: a directory with model.onnx, tokenizer.json and a small description file.

The description, ``remem-model.json``, says what the files cannot::

    {"name": "my-encoder", "dim": 384, "pooling": "cls", "max_tokens": 512,
     "query_prefix": "Represent this sentence for searching relevant passages: "}

``name`` defaults to the directory's name, ``max_tokens`` to 512 and ``query_prefix`` to "".
``document_tokens`` (optional, at most ``max_tokens``) is the longest window a stored text is cut
into, for a model trained on shorter texts than it accepts; by default ``max_tokens``.
Any BERT-family encoder exported to ONNX with ``input_ids`` and ``attention_mask`` inputs and a
(batch, tokens, dim) first output works. Its files are hashed each time it is loaded, so a store
notices when they change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from remem.embedders.registry import known_models
from remem.embedders.spec import ModelFile, ModelFiles, ModelSpec, Pooling, file_sha256
from remem.errors import EmbedderError

DESCRIPTION_FILE = "remem-model.json"
_FIELDS = {"name", "dim", "pooling", "max_tokens", "document_tokens", "query_prefix", "license", "languages"}


def load_model_dir(directory: Path) -> tuple[ModelSpec, ModelFiles]:
    """The description and files of the model in ``directory``; EmbedderError naming what is wrong."""
    files = ModelFiles(model=directory / "model.onnx", tokenizer=directory / "tokenizer.json")
    for path in (directory / DESCRIPTION_FILE, files.model, files.tokenizer):
        if not path.is_file():
            raise EmbedderError(f"model directory {directory} has no {path.name}")
    fields = _read_description(directory / DESCRIPTION_FILE)
    max_tokens = _int(fields, "max_tokens", 512, 8, 65536)
    spec = ModelSpec(
        name=_name(fields, directory),
        dim=_int(fields, "dim", None, 1, 65536),
        pooling=_pooling(fields),
        max_tokens=max_tokens,
        document_tokens=_int(fields, "document_tokens", max_tokens, 8, max_tokens),
        model=ModelFile(sha256=file_sha256(files.model), size=files.model.stat().st_size),
        tokenizer=ModelFile(sha256=file_sha256(files.tokenizer), size=files.tokenizer.stat().st_size),
        license=_str(fields, "license", "unknown"),
        source=str(directory),
        query_prefix=_str(fields, "query_prefix", ""),
        languages=_languages(fields),
    )
    return spec, files


def _read_description(path: Path) -> dict[str, Any]:
    try:
        fields = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EmbedderError(f"cannot read {path}: {exc}") from exc
    if not isinstance(fields, dict):
        raise EmbedderError(f"{path} must hold a JSON object")
    unknown = sorted(set(fields) - _FIELDS)
    if unknown:
        raise EmbedderError(f"{path}: unknown fields {unknown} (known: {sorted(_FIELDS)})")
    return fields


def _name(fields: dict[str, Any], directory: Path) -> str:
    name = _str(fields, "name", directory.name).strip()
    if not name or any(ch.isspace() for ch in name):
        raise EmbedderError(f"model name {name!r} must be non-empty without spaces")
    if name in {spec.name for spec in known_models()}:
        raise EmbedderError(f"model name {name!r} is taken by a built-in model; choose another")
    return name


def _str(fields: dict[str, Any], key: str, default: str) -> str:
    value = fields.get(key, default)
    if not isinstance(value, str):
        raise EmbedderError(f"{DESCRIPTION_FILE}: {key} must be a string")
    return value


def _int(fields: dict[str, Any], key: str, default: int | None, low: int, high: int) -> int:
    value = fields.get(key, default)
    if value is None:
        raise EmbedderError(f"{DESCRIPTION_FILE}: {key} is required")
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise EmbedderError(f"{DESCRIPTION_FILE}: {key} must be an integer from {low} to {high}")
    return value


def _languages(fields: dict[str, Any]) -> tuple[str, ...]:
    """The optional ``languages``: a list of language codes ("en", "zh", … or "multilingual")."""
    value = fields.get("languages", [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise EmbedderError(f"{DESCRIPTION_FILE}: languages must be a list of language codes")
    return tuple(v.strip().lower() for v in value)


def _pooling(fields: dict[str, Any]) -> Pooling:
    value = fields.get("pooling")
    try:
        return Pooling(value)
    except ValueError:
        choices = ", ".join(p.value for p in Pooling)
        raise EmbedderError(f"{DESCRIPTION_FILE}: pooling must be one of {choices}") from None
