"""Splitting a long text's tokens into overlapping model windows, as small pure functions.

A text longer than the model window is covered by several windows, each ``[CLS] … [SEP]`` and at
most ``window`` tokens long; consecutive windows share half their content tokens, so a sentence cut
at one window's edge is whole in the next, and most tokens are in two windows.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The fraction of a window's content tokens that the next window repeats. A long memory scores as
#: its best window, so a passage should sit well inside some window. Measured with the bundled
#: model's vector lane (same embedder; 0.25 before): SciFact nDCG@10 (5,183 abstracts, 128-token
#: windows) 0.6829 → 0.6899, hybrid 0.7446 → 0.7481; LoCoMo's 272 sessions stored whole (one
#: memory each, ~690 tokens), the session holding a question's evidence within its conversation,
#: MRR (retired bench/long_memories.py): 128-token windows 0.6005 → 0.6071, 256-token windows
#: 0.5982 → 0.6050. With 256-token windows SciFact alone did not gain (vector 0.6554 → 0.6592, hybrid
#: 0.7417 → 0.7401); nor did multilingual-e5-small's 512-token windows (SciFact 0.6560 / 0.7357
#: both ways: 61 of its 5,183 documents get other windows). Windows per SciFact abstract: 3.7 →
#: 4.8 (1.9 at 256 tokens and 0.25); embedding them: 23.6 documents/s against 24.6 (bundled
#: model, 2 CPUs, same run).
OVERLAP_FRACTION = 0.5


def window_starts(length: int, size: int, overlap: int) -> list[int]:
    """Start offsets of windows of ``size`` tokens over ``length`` tokens, ``overlap`` shared.

    The last window ends exactly at ``length`` (it may overlap its neighbour by more).
    """
    if size < 1 or not 0 <= overlap < size:
        raise ValueError(f"need size ≥ 1 and 0 ≤ overlap < size, got size={size}, overlap={overlap}")
    if length <= size:
        return [0]
    step = size - overlap
    starts = list(range(0, length - size + 1, step))
    if starts[-1] + size < length:
        starts.append(length - size)
    return starts


def split_windows(ids: Sequence[int], window: int) -> list[list[int]]:
    """Token ids that start with [CLS] and end with [SEP], as windows of at most ``window`` ids.

    A text that fits is one window, unchanged. Otherwise each window is [CLS], a run of the
    content tokens, [SEP]; runs overlap by OVERLAP_FRACTION of their length.
    """
    if len(ids) <= window:
        return [list(ids)]
    if window < 3:
        raise ValueError(f"a window needs room for [CLS], one token and [SEP], got {window}")
    cls, body, sep = ids[0], ids[1:-1], ids[-1]
    size = window - 2
    overlap = int(size * OVERLAP_FRACTION)
    return [[cls, *body[start : start + size], sep] for start in window_starts(len(body), size, overlap)]


#: Texts longer than this (characters) are tokenised piece by piece: the tokenizer's memory grows
#: with the length of what it is given (about 150 bytes per character for one 5 MB text).
CHUNK_CHARS = 20_000


def text_chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters, each cut just after whitespace where
    the piece has any (so no word is split, and WordPiece tokens are those of the whole text)."""
    pieces, start = [], 0
    while len(text) - start > size:
        end = start + size
        cut = max(text.rfind(space, start, end) for space in (" ", "\n", "\t", "\r"))
        end = cut + 1 if cut >= start else end
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    return pieces
