"""How a calibrated variant's windows are grouped: one length per batch, nothing padded."""

from __future__ import annotations

from remem.embedders.runner import UNIFORM_BATCH_TOKENS, uniform_batches


def test_windows_of_one_length_share_a_batch_shortest_first() -> None:
    lengths = [7, 3, 7, 3, 3, 9, 7, 3]
    sequences = [[1] * n for n in lengths]
    batches = uniform_batches(sequences, 3)
    assert batches == [[1, 3, 4], [7], [0, 2, 6], [5]]
    assert sorted(row for batch in batches for row in batch) == list(range(len(lengths)))
    for batch in batches:
        assert len({lengths[row] for row in batch}) == 1


def test_long_windows_are_capped_by_tokens_and_size_one_keeps_the_order() -> None:
    longest = [[1] * 200 for _ in range(5)]
    assert [len(batch) for batch in uniform_batches(longest, 16)] == [UNIFORM_BATCH_TOKENS // 200] * 2 + [1]
    assert uniform_batches([[1, 2], [1], [1, 2, 3]], 1) == [[0], [1], [2]]
    assert uniform_batches([], 16) == []
