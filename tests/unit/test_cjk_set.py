"""The CJK cross-lingual set (tests/data/cjk_set.json): its shape, its languages and kinds, and that
every query paraphrases its answer (bench/cjk.py's ``overlap`` rule)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from helpers import bench_module

ROOT = Path(__file__).resolve().parents[2]
cjk = bench_module("cjk")

ISSUE_MEMORY = "使用者想加強旅遊英文。"
ISSUE_QUERY = "我想練習在機場和飯店會用到的英文。"

#: Characters written only in Traditional Chinese, and their Simplified forms (only in Simplified).
TRADITIONAL, SIMPLIFIED = (
    "們個這說會時過還對來樣為點機東開國護換兒買處間請問經種發關長題動現當學車電話見飯醫務邊讓從實體錢門書員聽寫應號",
    "们个这说会时过还对来样为点机东开国护换儿买处间请问经种发关长题动现当学车电话见饭医务边让从实体钱门书员听写应号",
)
KANA = re.compile("[\u3041-\u30ff]")
HANGUL = re.compile("[\uac00-\ud7a3]")
LATIN = re.compile("[A-Za-z]")


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (ROOT / "tests" / "data" / "cjk_set.json").read_text(encoding="utf-8")
    )
    return loaded


def script(text: str) -> str | None:
    """'hant' or 'hans' for Chinese written in one script (by the characters only it uses), else None."""
    traditional, simplified = set(text) & set(TRADITIONAL), set(text) & set(SIMPLIFIED)
    if traditional and not simplified:
        return "hant"
    return "hans" if simplified and not traditional else None


def language(text: str) -> str:
    """ko, ja, zh or en by script; 'mixed' for CJK text with Latin words in it."""
    cjk_text = bool(HANGUL.search(text) or KANA.search(text) or cjk.HAN.search(text))
    if cjk_text and LATIN.search(text):
        return "mixed"
    if HANGUL.search(text):
        return "ko"
    if KANA.search(text):
        return "ja"
    return "zh" if cjk_text else "en"


def test_the_set_has_its_shape(data: dict[str, Any]) -> None:
    assert set(data) == {"description", "memories", "queries"} and "CC0" in data["description"]
    memories, queries = data["memories"], data["queries"]
    assert len(memories) >= 40 and len(queries) >= 24
    keys = [memory["key"] for memory in memories]
    assert len(set(keys)) == len(keys), [key for key, n in Counter(keys).items() if n > 1]
    assert all(set(m) == {"key", "text"} and m["text"].strip() for m in memories)
    texts = [memory["text"] for memory in memories]
    assert len(set(texts)) == len(texts)
    for query in queries:
        assert set(query) <= {"text", "answer", "kind", "allow_shared"} and query["text"].strip(), query
        assert query["answer"] in keys, query
        assert query["kind"] in cjk.KINDS and query["kind"] != "all", query
    assert len({q["text"] for q in queries}) == len(queries)


def test_every_kind_is_asked_and_chinese_crosses_to_english(data: dict[str, Any]) -> None:
    kinds = Counter(query["kind"] for query in data["queries"])
    assert set(kinds) == set(cjk.KINDS) - {"all"}, kinds
    assert kinds["zh-en"] + kinds["en-zh"] >= 6
    assert kinds["zh-en"] >= 2 and kinds["en-zh"] >= 2


def test_each_query_is_in_the_languages_its_kind_names(data: dict[str, Any]) -> None:
    texts = {memory["key"]: memory["text"] for memory in data["memories"]}
    for query in data["queries"]:
        asked, stored = language(query["text"]), language(texts[query["answer"]])
        if query["kind"] == "mixed":
            assert "mixed" in (asked, stored), query
        else:
            assert f"{asked}-{stored}" == query["kind"], query


def test_the_memories_are_in_every_language_with_distractors(data: dict[str, Any]) -> None:
    texts = [memory["text"] for memory in data["memories"]]
    languages = Counter(language(text) for text in texts)
    assert all(languages[name] >= 5 for name in ("zh", "ja", "ko", "en")), languages
    assert languages["mixed"] >= 3, languages
    scripts = Counter(script(text) for text in texts if language(text) == "zh")
    assert scripts["hant"] >= 5 and scripts["hans"] >= 5, scripts
    assert ISSUE_MEMORY in texts


def test_chinese_queries_cross_between_traditional_and_simplified(data: dict[str, Any]) -> None:
    texts = {memory["key"]: memory["text"] for memory in data["memories"]}
    pairs = {(script(q["text"]), script(texts[q["answer"]])) for q in data["queries"] if q["kind"] == "zh-zh"}
    assert {("hant", "hans"), ("hans", "hant"), ("hant", "hant"), ("hans", "hans")} <= pairs, pairs


def test_the_query_of_issue_30_finds_the_travel_english_note(data: dict[str, Any]) -> None:
    texts = {memory["key"]: memory["text"] for memory in data["memories"]}
    asked = [query for query in data["queries"] if query["text"] == ISSUE_QUERY]
    assert len(asked) == 1 and texts[asked[0]["answer"]] == ISSUE_MEMORY
    # the only query allowed to share more: it is the issue's own wording, kept as reported
    assert [q["text"] for q in data["queries"] if "allow_shared" in q] == [ISSUE_QUERY]


def test_every_query_paraphrases_its_answer(data: dict[str, Any]) -> None:
    """At most one shared Han character; no shared katakana word, Hangul pair or English word."""
    assert cjk.problems(data) == []


@pytest.mark.parametrize(
    ("query", "memory"),
    [
        ("老王爱吃辣吗？", "老王特别能吃辣，聚餐就选川菜馆。"),
        ("ラーメン好きは誰？", "田中さんは豚骨ラーメンが大好き。"),
        ("강아지 알레르기?", "우리 강아지 초코는 닭고기 알레르기가 있다."),
        ("Who eats Eggs?", "Priya became vegetarian last year but still eats eggs."),
        ("Where do the flights go?", "Kenji prefers window seats on long flights."),
        ("Figma 在哪", "設計稿統一放在 Figma 的 Q3 資料夾。"),
    ],
)
def test_the_rule_catches_a_query_that_copies_its_answer(query: str, memory: str) -> None:
    copied = {"memories": [{"key": "m", "text": memory}], "queries": [{"text": query, "answer": "m"}]}
    assert len(cjk.problems(copied)) == 1


def test_the_rule_lets_one_shared_han_character_and_grammar_pass() -> None:
    assert cjk.overlap("宠物一天吃几顿？", "家里的猫叫豆豆，每天要喂两次罐头。")["han"] == ["天"]
    memory = {"memories": [{"key": "m", "text": "家里的猫叫豆豆，每天要喂两次罐头。"}]}
    assert cjk.problems({**memory, "queries": [{"text": "宠物一天吃几顿？", "answer": "m"}]}) == []
    assert cjk.content_words("What is the time of my flight?") == {"time", "flight"}
