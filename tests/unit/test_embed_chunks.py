"""How a batch's documents are cut into embedding calls (``remem.core.bulk.chunks``): in order, by
a count and a character budget, a text longer than the budget alone."""

from __future__ import annotations

from remem.core.bulk import chunks


def test_runs_keep_the_order_and_hold_at_most_the_count_and_the_characters() -> None:
    texts = ["aaaa", "bb", "cccccc", "d", "ee", "ffffffffff", "g"]
    runs = [list(run) for run in chunks(texts, 3, 8)]
    assert runs == [["aaaa", "bb"], ["cccccc", "d"], ["ee"], ["ffffffffff"], ["g"]]
    assert [list(run) for run in chunks(texts, 2, 100)] == [texts[0:2], texts[2:4], texts[4:6], texts[6:]]
    assert [list(run) for run in chunks(texts, 100, 100)] == [texts]
    assert list(chunks([], 5, 5)) == []
