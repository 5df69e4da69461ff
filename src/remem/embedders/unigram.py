"""A Unigram (SentencePiece) tokenizer that gives the ``tokenizers`` library's ids for a fraction
of its start-up time and memory.

The library builds a byte trie with a hash map in every node: for multilingual-e5-small's 250,002
pieces that is 783k nodes, about 280 MB and 0.6 s of CPU in every process that embeds a single
query. This keeps the pieces in one dict (about 35 MB) and runs the library's own search
(``Unigram::encode_optimized``: Viterbi over the pieces that start at each character, candidates in
order of length, a strictly better score wins, an unknown character scores the lowest piece's
score − 10, consecutive unknowns become one ``<unk>``). The normalisation and pre-tokenisation are
still the library's, made from the same file with a one-piece vocabulary (no trie).

``lean_tokenizer`` returns None for a tokenizer.json of another shape (another model type, added
tokens, byte fallback, a post-processor other than a template): the caller then uses the library.
tests/integration/test_multilingual.py checks the ids are the library's on every test text.
"""

from __future__ import annotations

import gc
import json
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

#: An unknown character's score is the lowest piece's minus this (the library's K_UNK_PENALTY).
UNK_PENALTY = 10.0
#: Words whose pieces are remembered (then the memory starts again): repeated words cost nothing.
CACHED_WORDS = 50_000


class Encoded(NamedTuple):
    """A text's token ids (the part of the library's ``Encoding`` that remem reads)."""

    ids: list[int]


class UnigramTokenizer:
    """Turns texts into token ids as the ``tokenizers`` library does with the same file."""

    def __init__(self, document: dict[str, Any], front: Any) -> None:
        """``document``: a parsed tokenizer.json of the shape ``lean_tokenizer`` accepts; ``front``:
        a library Tokenizer of the same file whose normaliser and pre-tokenizer are used."""
        model = document["model"]
        pieces: list[str] = [piece for piece, _ in model["vocab"]]
        self._ids = dict(zip(pieces, range(len(pieces)), strict=True))  # a piece twice: its last id
        self._scores = array("d", [score for _, score in model["vocab"]])
        self._unk = int(model["unk_id"])
        self._unk_score = min(self._scores) - UNK_PENALTY
        self._longest = max(map(len, pieces))
        self._head, self._tail = _template(document.get("post_processor"), self._ids)
        self._normalizer, self._pre_tokenizer = front.normalizer, front.pre_tokenizer
        self._words: dict[str, list[int]] = {}

    def encode(self, text: str, add_special_tokens: bool = True) -> Encoded:
        """The token ids of ``text`` (between the template's special tokens unless told not)."""
        normal = self._normalizer.normalize_str(text) if self._normalizer is not None else text
        words = (
            [word for word, _ in self._pre_tokenizer.pre_tokenize_str(normal)]
            if self._pre_tokenizer is not None
            else [normal]
        )
        ids = [piece for word in words for piece in self._word_ids(word)]
        return Encoded([*self._head, *ids, *self._tail] if add_special_tokens else ids)

    def encode_batch(self, texts: Sequence[str]) -> list[Encoded]:
        """``encode`` of every text, in order."""
        return [self.encode(text) for text in texts]

    def no_truncation(self) -> None:
        """Nothing to do: texts are never cut here (the library's method, for the same calls)."""

    def no_padding(self) -> None:
        """Nothing to do: texts are never padded here (the library's method, for the same calls)."""

    def _word_ids(self, word: str) -> list[int]:
        known = self._words.get(word)
        if known is None:
            if len(self._words) >= CACHED_WORDS:
                self._words.clear()
            known = self._words[word] = self._search(word)
        return known

    def _search(self, word: str) -> list[int]:
        """The best-scoring pieces of ``word``, as ids (Viterbi, the library's tie rules)."""
        size, get, scores = len(word), self._ids.get, self._scores
        best, starts, found = [0.0] * (size + 1), [-1] * (size + 1), [0] * (size + 1)
        for start in range(size):
            base, single = best[start], False
            for end in range(start + 1, min(size, start + self._longest) + 1):
                piece = get(word[start:end])
                if piece is None:
                    continue
                single = single or end == start + 1
                score = scores[piece] + base
                if starts[end] < 0 or score > best[end]:
                    best[end], starts[end], found[end] = score, start, piece
            score = self._unk_score + base
            if not single and (starts[start + 1] < 0 or score > best[start + 1]):
                best[start + 1], starts[start + 1], found[start + 1] = score, start, self._unk
        return self._path(word, starts, found)

    def _path(self, word: str, starts: list[int], found: list[int]) -> list[int]:
        """The ids along the best path ending at the word's end, consecutive unknowns fused."""
        pieces: list[str] = []
        unknown: list[str] = []
        end = len(word)
        while end > 0:
            start = starts[end]
            if found[end] == self._unk:
                unknown.append(word[start:end])
            else:
                if unknown:
                    pieces.append("".join(reversed(unknown)))
                    unknown = []
                pieces.append(word[start:end])
            end = start
        if unknown:
            pieces.append("".join(reversed(unknown)))
        return [self._ids.get(piece, self._unk) for piece in reversed(pieces)]


def _template(processor: Any, ids: dict[str, int]) -> tuple[list[int], list[int]]:
    """The special token ids a TemplateProcessing puts before and after a single text."""
    if processor is None:
        return [], []
    head: list[int] = []
    tail: list[int] = []
    side = head
    for item in processor["single"]:
        if "Sequence" in item:
            side = tail
        else:
            side += processor["special_tokens"][item["SpecialToken"]["id"]]["ids"]
    return head, tail


def _reproducible(document: Any) -> bool:
    """True when ``document`` is a tokenizer.json whose ids ``UnigramTokenizer`` reproduces."""
    if not isinstance(document, dict) or document.get("added_tokens"):
        return False
    model, processor = document.get("model"), document.get("post_processor")
    if not isinstance(model, dict) or model.get("type") != "Unigram" or model.get("byte_fallback"):
        return False
    if not isinstance(model.get("unk_id"), int) or not model.get("vocab"):
        return False
    if processor is None:
        return True
    single = processor.get("single") if processor.get("type") == "TemplateProcessing" else None
    return isinstance(single, list) and sum("Sequence" in item for item in single) == 1


def lean_tokenizer(data: bytes) -> UnigramTokenizer | None:
    """A ``UnigramTokenizer`` of the tokenizer.json bytes ``data``, or None when the file is not of
    a shape it reproduces (then the library is used); the library's errors when the rest of the
    file is not valid."""
    from tokenizers import Tokenizer  # noqa: PLC0415 - lazy: not needed by list/export

    with _collector_paused():
        try:
            document = json.loads(data)
        except ValueError:
            return None  # the library says what is wrong with it
        if not _reproducible(document):
            return None
        model = document["model"]
        front = {**document, "model": {**model, "unk_id": 0, "vocab": [model["vocab"][model["unk_id"]]]}}
        front["post_processor"] = None
        return UnigramTokenizer(document, Tokenizer.from_str(json.dumps(front)))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector paused for a block that makes objects with no cycles: the 250k lists
    of a vocabulary set it off hundreds of times, each scanning everything the process holds (a
    third of the tokenizer's load time in a CLI process; nothing is left uncollected: it runs
    again after the block)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
