"""A store whose keyword terms an older analyzer built is re-analysed when it is opened, on both
back-ends, so a CJK word is found without a manual reindex."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from remem.backends.analyzer import ANALYZER_VERSION, analyze
from remem.backends.local import LocalBackend
from remem.backends.local.files import DB_FILE
from remem.testing import FAKE_MODEL, fake_vector
from remem.types import Filters, NewMemory

TEXT = "使用者想加強旅遊英文。"


def test_analyzer_indexes_cjk_runs_as_bigrams() -> None:
    assert analyze(TEXT) == ["使用", "用者", "者想", "想加", "加強", "強旅", "旅遊", "遊英", "英文"]
    assert analyze("使用者希望 TOEIC 達到 850 分。") == [
        "使用",
        "用者",
        "者希",
        "希望",
        "toeic",
        "達到",
        "850",
        "分",
    ]
    assert analyze("회의는 매주") == ["회의", "의는", "매주"]
    assert analyze("TOEIC達到850分") == ["toeic", "達到", "850", "分"]
    assert analyze("ｶﾀｶﾅ") == ["カタ", "タカ", "カナ"]  # half-width kana folded by NFKC


def _add(backend: LocalBackend | object) -> None:
    backend.add_many([NewMemory(TEXT)], [fake_vector(TEXT).reshape(1, -1)], FAKE_MODEL)  # type: ignore[attr-defined]


def test_a_local_store_of_an_older_analyzer_is_reanalysed_on_open(tmp_path: Path) -> None:
    with LocalBackend.open(tmp_path / "store", create=True) as backend:
        _add(backend)
    conn = sqlite3.connect(tmp_path / "store" / DB_FILE)
    with conn:
        conn.execute("DELETE FROM memories_fts")
        conn.execute("INSERT INTO memories_fts (rowid, terms) VALUES (1, ?)", (TEXT.rstrip("。"),))
        conn.execute("UPDATE store_meta SET value = '2' WHERE key = 'keyword_analyzer'")
    conn.close()
    with LocalBackend.open(tmp_path / "store", create=False) as backend:
        assert [mid for mid, _ in backend.keyword_top("旅遊", Filters(), 5)] == [1]


@pytest.mark.parametrize("recorded", ["2", ANALYZER_VERSION, None])  # the current analyzer, no positions
def test_a_postgres_store_of_an_older_analyzer_is_reanalysed_on_open(
    postgres_url: str, recorded: str | None
) -> None:
    from remem.backends.postgres.store import PostgresBackend
    from remem.backends.postgres.upkeep import TERMS_VERSION

    assert TERMS_VERSION.startswith(ANALYZER_VERSION)  # the analyzer's version is part of it
    with PostgresBackend.open(postgres_url, create=True) as backend:
        _add(backend)
        with backend.session.transaction(writes=True) as cursor:
            cursor.execute(f"UPDATE {backend.s}.memories SET terms = to_tsvector('simple', text)")
            cursor.execute(f"DELETE FROM {backend.s}.store_meta WHERE key = 'keyword_analyzer'")
            if recorded is not None:
                cursor.execute(
                    f"INSERT INTO {backend.s}.store_meta (key, value) VALUES ('keyword_analyzer', %s)",
                    (recorded,),
                )
        assert backend.keyword_top("旅遊", Filters(), 5) == []  # the old terms: one token per run
    with PostgresBackend.open(postgres_url, create=False) as backend:
        assert [mid for mid, _ in backend.keyword_top("旅遊", Filters(), 5)] == [1]
        assert backend.key_values().get("keyword_analyzer") == TERMS_VERSION
        checks, _ = backend.doctor(repair=False)
        assert all(check.ok for check in checks if "keyword" in check.name)
