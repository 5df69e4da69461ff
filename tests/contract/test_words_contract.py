"""Chinese, Japanese and Korean in the keyword lane, word order and scripts in the core's ranking —
the same on every back-end (PostgreSQL keeps no word positions, so the core checks phrases)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest

from remem.core.search.run import run_search
from remem.testing import FAKE_MODEL, fake_vector
from remem.types import Filters, NewMemory, SearchMode

if TYPE_CHECKING:
    from remem.backends.base import Backend

EVERYTHING = Filters()
CJK = {
    "travel": "使用者想加強旅遊英文。",
    "grammar": "使用者偏好簡短的文法解釋。",
    "toeic": "使用者希望 TOEIC 達到 850 分。",
    "examples": "使用者喜歡透過例句學習。",
    "meeting-ja": "会議は毎週月曜日の午前九時からです。",
    "lunch-ja": "昼ごはんはカレーライスが好きです。",
    "meeting-ko": "회의는 매주 월요일 오전 9시에 시작합니다.",
    "coffee-ko": "사용자는 아침에 커피를 마십니다.",
    "english": "We run Postgres 16 on the main box.",
}


def _add(backend: Backend, texts: dict[str, str]) -> dict[str, int]:
    memories = [NewMemory(text) for text in texts.values()]
    vectors = [fake_vector(m.text).reshape(1, -1) for m in memories]
    results = backend.add_many(memories, vectors, FAKE_MODEL)
    return dict(zip(texts, (r.id for r in results), strict=True))


@pytest.fixture
def cjk(backend: Backend) -> dict[str, int]:
    return _add(backend, CJK)


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        ("旅遊", "travel"),
        ("TOEIC", "toeic"),
        ("toeic 850", "toeic"),
        ("文法", "grammar"),
        ("例句", "examples"),
        ("会議", "meeting-ja"),
        ("月曜日", "meeting-ja"),
        ("カレー", "lunch-ja"),
        ("회의", "meeting-ko"),
        ("월요일 회의", "meeting-ko"),
        ("커피", "coffee-ko"),
        ("旅遊英文", "travel"),
    ],
)
def test_cjk_words_are_found_first_by_keyword(
    backend: Backend, cjk: dict[str, int], query: str, answer: str
) -> None:
    top = backend.keyword_top(query, EVERYTHING, 5)
    assert top and top[0][0] == cjk[answer], query


def test_one_cjk_character_matches_as_itself_and_runs_do_not_leak(
    backend: Backend, cjk: dict[str, int]
) -> None:
    assert [mid for mid, _ in backend.keyword_top("分", EVERYTHING, 5)] == [cjk["toeic"]]
    assert backend.keyword_top("旅行", EVERYTHING, 5) == []  # 旅 alone is not the bigram 旅行
    assert backend.keyword_top("postgres", EVERYTHING, 5)[0][0] == cjk["english"]


WRITERS = {f"w{w}n{n}": f"writer {w} note {n} about topic {w * n}" for w in range(1, 6) for n in range(1, 6)}


@pytest.mark.parametrize("mode", [SearchMode.KEYWORD, SearchMode.HYBRID])
def test_the_words_in_order_outrank_the_same_words(backend: Backend, mode: SearchMode) -> None:
    ids = _add(backend, WRITERS)
    for query, answer in (
        ("writer 2 note 5", "w2n5"),
        ("writer 5 note 2", "w5n2"),
        ("Writer 3, note 1!", "w3n1"),
    ):
        vector = fake_vector(query) if mode is SearchMode.HYBRID else None
        found = run_search(backend, query, vector, 3, EVERYTHING, mode=mode)
        assert found[0].memory.id == ids[answer], (mode, query)


@pytest.mark.parametrize("mode", [SearchMode.KEYWORD, SearchMode.HYBRID])
def test_quoted_parts_are_required_phrases(backend: Backend, mode: SearchMode) -> None:
    ids = _add(
        backend,
        {
            "phrase": "The rollback plan is in the wiki.",
            "apart": "Plan the rollback of the wiki page.",
            "other": "A plan for the garden.",
        },
    )
    query = 'wiki "rollback plan"'
    vector = fake_vector(query) if mode is SearchMode.HYBRID else None
    found = run_search(backend, query, vector, 5, EVERYTHING, mode=mode)
    assert [hit.memory.id for hit in found] == [ids["phrase"]]


def test_an_english_only_models_noise_does_not_rank_another_script_first(
    backend: Backend, cjk: dict[str, int]
) -> None:
    # The query vector *is* the Chinese memory's: the model's cosine says it is the best match.
    noise = fake_vector(CJK["toeic"])
    blind = run_search(backend, "database", noise, 3, EVERYTHING, mode=SearchMode.HYBRID, languages=("en",))
    assert blind[0].memory.id == cjk["english"]
    vector = run_search(backend, "database", noise, 3, EVERYTHING, mode=SearchMode.VECTOR, languages=("en",))
    assert vector[0].memory.id == cjk["english"]
    trusted = run_search(
        backend, "database", noise, 3, EVERYTHING, mode=SearchMode.VECTOR, languages=("multilingual",)
    )
    assert trusted[0].memory.id == cjk["toeic"]
    assert np.isclose(float(np.linalg.norm(noise)), 1.0)


def test_a_word_shared_across_scripts_still_finds_the_memory_in_hybrid_mode(
    backend: Backend, cjk: dict[str, int]
) -> None:
    # The keyword lane is untouched: a shared word still finds the memory in the other script.
    noise = fake_vector(CJK["toeic"])
    shared = run_search(backend, "TOEIC", noise, 1, EVERYTHING, mode=SearchMode.HYBRID, languages=("en",))
    assert shared[0].memory.id == cjk["toeic"]


#: 400 memories holding "rollback" and "plan" in every order but the quoted one, short enough to
#: fill every lane's top; the memory holding the phrase is long, so no lane ranks it near the top.
CROWD = [f"Rollback the plan, plan the rollback, {n}." for n in range(400)]
FILLER = " ".join(f"line {n} of the release checklist for the storage cluster." for n in range(60))
LONG = f"{FILLER} Then the rollback plan was signed off. {FILLER}"


def _add_texts(backend: Backend, memories: list[NewMemory]) -> list[int]:
    vectors = [fake_vector(m.text).reshape(1, -1) for m in memories]
    return [r.id for r in backend.add_many(memories, vectors, FAKE_MODEL)]


@pytest.mark.parametrize("mode", list(SearchMode))
def test_a_quoted_phrase_is_looked_for_in_the_whole_store(backend: Backend, mode: SearchMode) -> None:
    crowd = _add_texts(backend, [NewMemory(text) for text in CROWD])
    long, tagged, other_user = _add_texts(
        backend,
        [NewMemory(LONG), NewMemory(LONG + " Tagged.", tags=("ops",)), NewMemory(LONG, user="bob")],
    )
    assert len(crowd) == 400

    def ids(query: str, filters: Filters = EVERYTHING, k: int = 5) -> list[int]:
        vector = None if mode is SearchMode.KEYWORD else fake_vector(query)
        return [hit.memory.id for hit in run_search(backend, query, vector, k, filters, mode=mode)]

    holders = {long, tagged, other_user}
    assert set(ids('"rollback plan"')) == holders  # a filter: every holder, whatever the lanes' tops
    assert ids('"rollback plan"', Filters(tags=("ops",))) == [tagged]  # and the other filters still apply
    assert ids('"rollback plan"', Filters(user="bob")) == [other_user]
    assert ids('"plan rollback" "signed off"') == []  # every quoted phrase is required
    assert set(ids('"the rollback plan was signed off" checklist')) == holders


@pytest.mark.parametrize("mode", [SearchMode.VECTOR, SearchMode.HYBRID])
def test_a_quoted_phrase_of_stop_words_is_looked_for_in_the_whole_store(
    backend: Backend, mode: SearchMode
) -> None:
    _add_texts(backend, [NewMemory(f"to be or not {n}, to be") for n in range(300)])
    (answer,) = _add_texts(backend, [NewMemory(f"{FILLER} whether to be or not to be. {FILLER}")])
    query = '"to be or not to be"'  # no keyword term at all: every memory's text is checked
    found = run_search(backend, query, fake_vector(query), 5, EVERYTHING, mode=mode)
    assert [hit.memory.id for hit in found] == [answer]


LONG_WORD = "x" * 300
INDEXED_APART = [
    ('"rollback plan"', "Deploy the rollback-plan today."),  # inside an identifier
    ('"numpy 1 26"', "Pinned numpy==1.26.4 last week."),  # short numbers are no terms there
    ('"旅遊英文"', "使用者想加強旅遊 英文。"),  # CJK: bigrams, and no bigram across the space
    ('"café crème"', "Un Café Crème, s'il vous plaît."),  # case and accents
    (f'"deploy {LONG_WORD}"', f"Deploy {LONG_WORD} now."),  # a word a store may not index
    ('"the who"', "A record by The Who."),  # stop words only
]


@pytest.mark.parametrize(("query", "text"), INDEXED_APART)
@pytest.mark.parametrize("mode", [SearchMode.VECTOR, SearchMode.HYBRID])
def test_a_quoted_phrase_is_found_however_its_words_were_indexed(
    backend: Backend, mode: SearchMode, query: str, text: str
) -> None:
    others = [t for _, t in INDEXED_APART if t != text] + ["plan rollback 1 26 numpy who the deploy"]
    _add_texts(backend, [NewMemory(t) for t in others])
    (answer,) = _add_texts(backend, [NewMemory(text)])
    found = run_search(backend, query, fake_vector(query), 5, EVERYTHING, mode=mode)
    assert [hit.memory.id for hit in found] == [answer]
