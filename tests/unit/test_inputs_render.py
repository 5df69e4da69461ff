"""Input parsing/validation and output rendering (pure functions)."""

from __future__ import annotations

import io
import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem import Hit, Lane, Memory, render
from remem.errors import InvalidInputError
from remem.inputs import check_min_score, clean_name, clean_tags, parse_meta, read_text
from remem.render import MEMORY_FIELDS, hit_record, hits_table, json_line, memories_table, memory_record

# --- read_text -----------------------------------------------------------------------------------------


def _no_stdin() -> io.BytesIO:
    return io.BytesIO(b"SHOULD NOT BE READ")


def test_read_text_joins_words_with_spaces() -> None:
    assert read_text(["remember", "the", "milk"], _no_stdin()) == "remember the milk"
    assert read_text(["  padded  ", "words "], _no_stdin()) == "padded   words"


def test_read_text_dash_reads_stdin_and_strips() -> None:
    stdin = io.BytesIO("  line one\nline two ✓\n\n".encode())
    assert read_text(["-"], stdin) == "line one\nline two ✓"


def test_read_text_dash_among_other_words_is_literal() -> None:
    stdin = _no_stdin()
    assert read_text(["a", "-", "b"], stdin) == "a - b"
    assert stdin.tell() == 0


@pytest.mark.parametrize("words", [None, [], [""], ["   "], ["\t", "\n"]])
def test_read_text_rejects_empty_arguments(words: list[str] | None) -> None:
    with pytest.raises(InvalidInputError, match="empty"):
        read_text(words, _no_stdin())


@pytest.mark.parametrize("data", [b"", b"   \n\t  \r\n"])
def test_read_text_rejects_empty_stdin(data: bytes) -> None:
    with pytest.raises(InvalidInputError, match="stdin"):
        read_text(["-"], io.BytesIO(data), what="query")


def test_read_text_empty_message_names_what() -> None:
    with pytest.raises(InvalidInputError, match="query is empty"):
        read_text([" "], _no_stdin(), what="query")


@pytest.mark.parametrize("data", [b"\xff\xfe bad", b"ok then \xc3\x28", "caf\u00e9".encode("latin-1")])
def test_read_text_rejects_non_utf8_stdin(data: bytes) -> None:
    with pytest.raises(InvalidInputError, match="UTF-8"):
        read_text(["-"], io.BytesIO(data))


#: A text's edges that are not text: whitespace, a BOM, zero-width characters (issue 15 #21).
_EDGES = re.compile(r"^[\s\ufeff\u200b\u200c\u200d\u2060\u180e]+|[\s\ufeff\u200b\u200c\u200d\u2060\u180e]+$")


def _trimmed(text: str) -> str:
    return _EDGES.sub("", text)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=5).filter(lambda w: w != ["-"]))
def test_read_text_property_words(words: list[str]) -> None:
    expected = _trimmed(" ".join(words))
    if expected and "\x00" not in expected:  # NUL is refused (neither back-end stores it)
        assert read_text(words, _no_stdin()) == expected
    else:
        with pytest.raises(InvalidInputError):
            read_text(words, _no_stdin())


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_read_text_property_stdin(text: str) -> None:
    stdin = io.BytesIO(text.encode("utf-8", "surrogatepass"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates are not valid UTF-8
        with pytest.raises(InvalidInputError):
            read_text(["-"], stdin)
        return
    if _trimmed(text) and "\x00" not in text:  # NUL is refused (neither back-end stores it)
        assert read_text(["-"], stdin) == _trimmed(text)
    else:
        with pytest.raises(InvalidInputError):
            read_text(["-"], stdin)


# --- names, tags, meta, numbers --------------------------------------------------------------------------


def test_clean_name() -> None:
    assert clean_name(None, "--user") is None
    assert clean_name("  alice ", "--user") == "alice"
    for empty in ("", "   ", "\t\n"):
        with pytest.raises(InvalidInputError, match="--user"):
            clean_name(empty, "--user")


def test_clean_tags_strips_dedups_sorts() -> None:
    assert clean_tags(None) == ()
    assert clean_tags([]) == ()
    assert clean_tags(["zeta", " alpha", "zeta ", "mid", "alpha"]) == ("alpha", "mid", "zeta")


def test_clean_tags_rejects_empty_tag() -> None:
    with pytest.raises(InvalidInputError, match=r"^tags must not be empty$") as refused:
        clean_tags(["ok", "  "])
    assert refused.value.parameter == "tags"


def test_parse_meta() -> None:
    assert parse_meta(None) == {}
    assert parse_meta(["a=1", "b=x=y=z", "c=", " d =  spaced "]) == {
        "a": "1",
        "b": "x=y=z",
        "c": "",
        "d": "  spaced ",
    }


def test_parse_meta_last_value_wins() -> None:
    assert parse_meta(["k=first", "other=1", "k=second"]) == {"k": "second", "other": "1"}
    assert parse_meta(["k=first", " k =second"]) == {"k": "second"}


@pytest.mark.parametrize("pair", ["novalue", "", "=value", "  =value"])
def test_parse_meta_rejects_bad_pairs(pair: str) -> None:
    with pytest.raises(InvalidInputError, match=r"^meta ") as refused:
        parse_meta(["good=1", pair])
    assert refused.value.parameter == "meta"


#: Characters a meta value may hold: NUL is refused everywhere (neither back-end stores it).
_NO_NUL = st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))
_KEYS = st.text(_NO_NUL, min_size=1).filter(lambda k: "=" not in k and k.strip() == k and k != "")


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(_KEYS, st.text(_NO_NUL)))
def test_parse_meta_round_trip_property(meta: dict[str, str]) -> None:
    assert parse_meta([f"{key}={value}" for key, value in meta.items()]) == meta


@pytest.mark.parametrize("value", [None, 0.0, 0, 0.5, 1.0, 1])
def test_check_min_score_accepts(value: float | None) -> None:
    assert check_min_score(value) == value


@pytest.mark.parametrize("value", [math.nan, 1.5, -1.0, -0.01, 1.0000001, math.inf, -math.inf])
def test_check_min_score_rejects(value: float) -> None:
    with pytest.raises(InvalidInputError, match=r"^min_score must be between 0 and 1") as refused:
        check_min_score(value)
    assert refused.value.parameter == "min_score"


def _memory(mid: int = 7, text: str = "hello world", **changes: object) -> Memory:
    fields: dict[str, object] = {
        "id": mid,
        "text": text,
        "sha256": "ab" * 32,
        "created_at": "2024-05-06T07:08:09.123Z",
        "user": "alice",
        "conversation": "conv",
        "role": "user",
        "tags": ("a", "b"),
        "meta": {"k": "v"},
    }
    fields.update(changes)
    return Memory(**fields)  # type: ignore[arg-type]


def test_memory_record_field_names_and_order() -> None:
    record = memory_record(_memory())
    assert tuple(record) == MEMORY_FIELDS
    assert record == {
        "id": 7,
        "text": "hello world",
        "sha256": "ab" * 32,
        "created_at": "2024-05-06T07:08:09.123Z",
        "updated_at": None,
        "user": "alice",
        "conversation": "conv",
        "role": "user",
        "tags": ["a", "b"],
        "meta": {"k": "v"},
        "superseded_by": None,
        "superseded_at": None,
        "expires_at": None,
        "written_by": None,
    }


def test_hit_record_puts_score_second() -> None:
    record = hit_record(Hit(_memory(), 0.123456789, vector=Lane(2, 0.5), keyword=None))
    assert tuple(record) == ("id", "score", *MEMORY_FIELDS[1:], "lanes", "snippet")
    assert record["id"] == 7
    assert record["score"] == 0.123457
    assert record["lanes"] == {"vector": {"rank": 2, "score": 0.5}, "keyword": None}


def test_json_line_is_one_line_and_keeps_non_ascii() -> None:
    memory = _memory(text="line one\nline two — café ✓ 日本語 🧠", meta={"ключ": "значение\n2"})
    line = json_line(hit_record(Hit(memory, -0.5)))
    assert "\n" not in line
    assert "café ✓ 日本語 🧠" in line
    assert "\\u" not in line
    loaded = json.loads(line)
    assert loaded == hit_record(Hit(memory, -0.5))
    assert list(loaded) == ["id", "score", *MEMORY_FIELDS[1:], "lanes", "snippet"]


@settings(max_examples=100, deadline=None)
@given(st.text(), st.dictionaries(st.text(), st.text(), max_size=3))
def test_json_line_property(text: str, meta: dict[str, str]) -> None:
    record = memory_record(_memory(text=text, meta=meta))
    line = json_line(record)
    assert "\n" not in line and "\r" not in line
    assert json.loads(line) == record


def _hits(texts: list[str]) -> list[Hit]:
    return [Hit(_memory(mid=i + 1, text=text), 0.87654321 - i / 10) for i, text in enumerate(texts)]


def test_hits_table_shows_four_decimal_scores() -> None:
    table = hits_table([*_hits(["one"]), Hit(_memory(mid=12, text="neg"), -0.5)], width=None)
    lines = table.splitlines()
    assert lines[0].split() == ["ID", "SCORE", "CREATED", "USER", "TAGS", "TEXT"]
    assert lines[1].split() == ["1", "0.8765", "2024-05-06", "07:08", "alice", "a,b", "one"]
    assert lines[2].split()[:2] == ["12", "-0.5000"]


def test_hits_table_clips_text_to_width() -> None:
    long_text = "word " * 100
    table = hits_table(_hits([long_text.strip(), "short"]), width=80)
    lines = table.splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[1].endswith(" word…")  # cut at a word, within a word of the width
    assert len(lines[1]) > 80 - len("word ")
    assert lines[2].endswith("short")


def test_width_none_never_clips() -> None:
    long_text = "x" * 500
    table = hits_table(_hits([long_text]), width=None)
    assert long_text in table
    assert "…" not in table
    table = memories_table([_memory(text=long_text)], width=None)
    assert long_text in table
    assert "…" not in table


def test_tables_put_text_on_one_line() -> None:
    text = "first line\nsecond\tline\r\n\nthird"
    for table in (hits_table(_hits([text]), width=None), memories_table([_memory(text=text)], width=None)):
        lines = table.splitlines()
        assert len(lines) == 2
        assert lines[1].endswith("first line second line third")


def test_memories_table_columns_and_clip() -> None:
    table = memories_table([_memory(mid=3, text="y" * 300, user=None, tags=())], width=60)
    header, row = table.splitlines()
    assert header.split() == ["ID", "CREATED", "USER", "TAGS", "TEXT"]
    assert row.startswith(" 3  2024-05-06 07:08")
    assert len(row) <= 60
    assert row.endswith("…")


def test_empty_tables_have_only_a_header() -> None:
    assert hits_table([], width=80).splitlines()[0].split()[0] == "ID"
    assert len(hits_table([], width=80).splitlines()) == 1
    assert len(memories_table([], width=None).splitlines()) == 1


@pytest.mark.parametrize("name", ["ali\nce", "tab\there", "bell\x07"])
def test_clean_name_rejects_control_characters(name: str) -> None:
    with pytest.raises(InvalidInputError, match="control characters"):
        clean_name(name, "--user")


def test_tables_measure_wide_characters_in_terminal_columns() -> None:
    assert render.display_width("東京") == 4
    assert render.display_width("e\u0301") == 1
    rows = [["1", "東京の会議室は三階にあります。予約は前日までに。"]]
    clipped = render.table(["ID", "TEXT"], rows, width=20, numeric=1).splitlines()[1]
    assert clipped.endswith("…")
    assert render.display_width(clipped) <= 20


def test_hybrid_table_shows_the_fused_score_and_the_cosine() -> None:
    hits = [Hit(_memory(1), 0.0328, vector=Lane(1, 0.51234), keyword=Lane(1, 7.0)), Hit(_memory(2), 0.0161)]
    header, first, second = render.hits_table(hits, None, with_cosine=True).splitlines()
    assert header.split()[:3] == ["ID", "SCORE", "COSINE"]
    assert first.split()[:3] == ["1", "0.0328", "0.5123"]
    assert second.split()[:2] == ["2", "0.0161"] and "2024-05-06" in second.split()[2]


@pytest.mark.parametrize(
    ("text", "cells"),
    [("abc", 3), ("東京", 4), ("👍🏽", 2), ("a\u200bb", 2), ("e\u0301", 1), ("🧠 note", 7)],
)
def test_display_width_counts_terminal_cells(text: str, cells: int) -> None:
    """Widths come from a maintained cell-width table (rich): a skin-toned emoji is 2 cells, a
    zero-width space 0, a combining accent 0."""
    assert render.display_width(text) == cells
