"""remem's own Unigram tokenizer (embedders/unigram.py) gives the ``tokenizers`` library's ids for the
same tokenizer.json, on small hand-made vocabularies full of ties, unknown characters and special
pieces; files of another shape go to the library. (multilingual-e5-small's real file, and the
memory a cold search takes with it: tests/integration/test_multilingual.py.)"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer

from remem.embedders.e5.charsmap import precompiled_charsmap
from remem.embedders.registry import bundled_tokenizer
from remem.embedders.runner import _load_tokenizer
from remem.embedders.spec import file_sha256
from remem.embedders.unigram import UnigramTokenizer, lean_tokenizer

#: Pieces whose scores tie in many ways (equal sums along different paths), an "<unk>" that text
#: can spell, one-character pieces missing for some characters (those become unknowns), and
#: pieces of several characters beyond the one-byte range.
PIECES = [
    ("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0),
    ("▁", -2.0), ("a", -3.0), ("b", -3.0), ("ab", -6.0), ("ba", -5.0), ("▁a", -4.0), ("▁ab", -7.0),
    ("aba", -8.0), ("bab", -9.0), ("c", -4.5), ("abc", -11.0), ("▁c", -6.5), ("é", -3.0),
    ("▁é", -5.0), ("日本", -4.0), ("日", -3.0), ("本", -3.0), ("語", -4.0), ("本語", -6.0),
    ("😀", -7.0), ("▁😀", -7.5), ("a", -1.0),  # "a" twice: the library keeps its last id
]  # fmt: skip
ALPHABET = "ab cdé日本語😀x<>/unk\u0301Ａ"


def tokenizer_document(pieces: list[tuple[str, float]], **changes: Any) -> dict[str, Any]:
    """A tokenizer.json of multilingual-e5-small's shape (e5/tokenizer.py) with these pieces."""
    metaspace = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
    charsmap = precompiled_charsmap({0xFF21: "A", 0x00A0: " ", 0x00AD: ""})
    document: dict[str, Any] = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": {
            "type": "Sequence",
            "normalizers": [
                {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
            ],
        },
        "pre_tokenizer": metaspace,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "<s>", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "</s>", "type_id": 0}},
            ],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 0}}],
            "special_tokens": {
                "<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]},
            },
        },
        "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": 3, "vocab": [list(p) for p in pieces], "byte_fallback": False},
    }
    document.update(changes)
    return document


def both(document: dict[str, Any]) -> tuple[UnigramTokenizer, Tokenizer]:
    data = json.dumps(document, ensure_ascii=False).encode()
    lean = lean_tokenizer(data)
    assert lean is not None
    return lean, Tokenizer.from_buffer(data)


def texts(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 24))) for _ in range(count)]


EDGES = ["", " ", "   ", "ab  ba ", " abc", "<unk><s></s>", "xxyx", "aé\u0301", "Ａ\u0301b", "日本語😀😀"]


@pytest.mark.parametrize("processor", ["template", "none"])
def test_ids_are_the_librarys_on_thousands_of_texts(processor: str) -> None:
    changes = {} if processor == "template" else {"post_processor": None}
    lean, library = both(tokenizer_document(PIECES, **changes))
    for text in [*EDGES, *texts(seed=7, count=4000)]:
        assert lean.encode(text).ids == library.encode(text).ids, repr(text)
        plain = lean.encode(text, add_special_tokens=False).ids
        assert plain == library.encode(text, add_special_tokens=False).ids, repr(text)
    batch = texts(seed=8, count=50)
    assert [e.ids for e in lean.encode_batch(batch)] == [e.ids for e in library.encode_batch(batch)]


def test_scores_that_tie_everywhere_pick_the_librarys_path() -> None:
    flat = [(piece, -1.0) for piece, _ in PIECES[:4]] + [
        (p, -1.0) for p in ["a", "b", "ab", "ba", "aba", "▁"]
    ]
    lean, library = both(tokenizer_document(flat))
    for text in ["ababab", "abababa", "ba ab aba", *texts(seed=9, count=2000)]:
        assert lean.encode(text).ids == library.encode(text).ids, repr(text)


def test_a_word_longer_than_the_cache_is_still_tokenised_alike() -> None:
    lean, library = both(tokenizer_document(PIECES))
    long = "ab" * 3000 + "x" * 50 + "日本語" * 500
    assert lean.encode(long).ids == library.encode(long).ids


@pytest.mark.parametrize(
    "change",
    [
        {"added_tokens": [{"id": 0, "content": "<s>", "special": True}]},
        {
            "model": {
                "type": "Unigram",
                "unk_id": 3,
                "vocab": [list(p) for p in PIECES],
                "byte_fallback": True,
            }
        },
        {"model": {"type": "Unigram", "unk_id": None, "vocab": [list(p) for p in PIECES]}},
        {"post_processor": {"type": "ByteLevel"}},
    ],
    ids=["added tokens", "byte fallback", "no unknown piece", "another post-processor"],
)
def test_a_file_of_another_shape_is_left_to_the_library(change: dict[str, Any]) -> None:
    data = json.dumps(tokenizer_document(PIECES, **change)).encode()
    assert lean_tokenizer(data) is None


def test_the_runner_takes_it_for_a_unigram_file_and_the_library_for_the_bundled_one(tmp_path: Path) -> None:
    unigram = tmp_path / "tokenizer.json"
    unigram.write_text(json.dumps(tokenizer_document(PIECES)), encoding="utf-8")
    assert isinstance(_load_tokenizer(str(unigram), file_sha256(unigram)), UnigramTokenizer)
    bundled = bundled_tokenizer()
    assert isinstance(_load_tokenizer(str(bundled), file_sha256(bundled)), Tokenizer)
