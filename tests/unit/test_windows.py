"""Long texts are split into overlapping windows that cover every token."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.embedders.windows import OVERLAP_FRACTION, split_windows, text_chunks, window_starts

CLS, SEP = 101, 102


def _ids(content: int) -> list[int]:
    return [CLS, *range(1000, 1000 + content), SEP]


def test_a_text_that_fits_is_one_window_unchanged() -> None:
    ids = _ids(254)
    assert split_windows(ids, 256) == [ids]


def test_one_token_too_many_makes_two_windows_that_cover_the_end() -> None:
    windows = split_windows(_ids(255), 256)
    assert len(windows) == 2
    assert windows[0][1] == 1000 and windows[-1][-2] == 1000 + 254


@given(content=st.integers(min_value=1, max_value=3000), window=st.integers(min_value=3, max_value=600))
def test_windows_cover_every_token_in_order_with_cls_and_sep(content: int, window: int) -> None:
    windows = split_windows(_ids(content), window)
    covered: set[int] = set()
    for item in windows:
        assert len(item) <= window
        assert item[0] == CLS and item[-1] == SEP
        body = item[1:-1]
        assert body == list(range(body[0], body[0] + len(body)))  # a contiguous run
        covered.update(body)
    assert covered == set(range(1000, 1000 + content))


@given(length=st.integers(min_value=1, max_value=5000), size=st.integers(min_value=2, max_value=500))
def test_consecutive_windows_overlap_by_at_least_the_fraction(length: int, size: int) -> None:
    overlap = int(size * OVERLAP_FRACTION)
    starts = window_starts(length, size, overlap)
    assert starts[0] == 0
    assert min(starts[-1] + size, length) == length
    for before, after in itertools.pairwise(starts):
        assert after > before
        assert before + size - after >= overlap  # shared tokens


def test_a_512_token_model_splits_a_1200_token_text_into_four_windows_half_shared() -> None:
    windows = split_windows(_ids(1200), 512)
    assert [len(w) for w in windows] == [512, 512, 512, 512]
    assert [w[1] - 1000 for w in windows] == [0, 255, 510, 690]  # the last one ends at the text's end
    assert windows[1][1] == 1000 + 510 - int(510 * OVERLAP_FRACTION)


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (10, 10), (10, -1)])
def test_impossible_windows_are_refused(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="size"):
        window_starts(100, size, overlap)


@given(st.text(alphabet=" \nab", max_size=400), st.integers(min_value=1, max_value=50))
def test_text_chunks_rebuild_the_text_and_never_split_a_word_that_fits(text: str, size: int) -> None:
    pieces = text_chunks(text, size)
    assert "".join(pieces) == text and all(len(piece) <= size for piece in pieces)
    for piece in pieces[:-1]:
        assert piece[-1].isspace() or not any(c.isspace() for c in piece)  # cut after whitespace
