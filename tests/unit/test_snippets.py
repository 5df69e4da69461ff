"""The snippet of a long memory (``remem.core.snippets``): which span it picks, and that its offsets
are always those of the text (issue 26 #5)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from remem import render
from remem.backends.analyzer import analyze
from remem.core.search.snippets import LONG_TEXT, SNIPPET_CHARS, query_terms, snippet_of
from remem.types import Hit, Memory, Snippet

FILLER = "lorem ipsum dolor sit amet consectetur " * 40  # 1,560 characters, none of the query words


def _around(text: str, query: str, needle: str) -> bool:
    snippet = snippet_of(text, query_terms(analyze(query)))
    assert snippet is not None and text[snippet.start : snippet.end] == snippet.text
    return needle in snippet.text


def test_a_text_short_enough_to_show_whole_has_no_snippet() -> None:
    assert snippet_of("x" * LONG_TEXT, ["x"]) is None
    assert snippet_of("x " * LONG_TEXT, ["x"]) is not None


def test_an_identifier_matches_whole_a_word_also_as_the_start_of_a_longer_one() -> None:
    text = f"{FILLER} pinned numpy 1.26.45 here {FILLER} pinned numpy 1.26.4 there {FILLER}"
    assert _around(text, "1.26.4", "1.26.4 there")
    assert _around(f"{FILLER} we deployed it {FILLER}", "deploys", "deployed")
    assert not _around(f"{FILLER} logistics {FILLER} log {FILLER}"[:4000], "log", "logistics")


def test_a_rare_term_outweighs_a_common_one_repeated() -> None:
    text = f"{'queue ' * 60}{FILLER} the zanzibar queue {FILLER}"
    assert _around(text, "zanzibar queue", "zanzibar")


def test_a_match_longer_than_a_snippet_is_cut_to_one() -> None:
    token = "k" + "x7" * 400
    text = f"{FILLER} pasted {token} here {FILLER}"
    snippet = snippet_of(text, query_terms(analyze(token)))
    assert snippet is not None and text[snippet.start : snippet.end] == snippet.text
    assert snippet.text.startswith(token[:100]) and len(snippet.text) <= SNIPPET_CHARS


def test_offsets_stay_exact_when_lower_case_changes_the_length() -> None:
    text = "İ" * 500 + " the vault key " + "İ" * 500  # "İ".lower() is two characters
    assert _around(text, "vault", "vault key")


def test_cjk_bigrams_match_inside_a_run() -> None:
    assert _around("数据库" * 200 + "旅遊英文" + "数据库" * 200, "旅遊", "旅遊")


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=LONG_TEXT + 1, max_size=3_000), st.text(max_size=40))
def test_a_snippet_is_always_a_slice_of_the_text(text: str, query: str) -> None:
    snippet = snippet_of(text, query_terms(analyze(query)))
    assert snippet is not None
    assert text[snippet.start : snippet.end] == snippet.text
    assert 0 <= snippet.start < snippet.end <= len(text) and len(snippet.text) <= SNIPPET_CHARS


def test_a_table_shows_the_snippet_marking_where_the_text_goes_on() -> None:
    text = "the start " + FILLER
    memory = Memory(1, text, "0" * 64, "2026-12-01T00:00:00.000Z", None, None, None, (), {})
    assert render.shown_text(Hit(memory, 1.0, snippet=Snippet(text[:10], 0, 10))) == "the start…"
    assert render.shown_text(Hit(memory, 1.0, snippet=Snippet(text[4:], 4, len(text)))).startswith("…start ")
    assert render.shown_text(Hit(memory, 1.0)) == text
