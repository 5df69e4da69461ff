"""What the page shows: the newest memories a page at a time, search with its filters, a memory's
page (whole text, tags, metadata, times, its supersede chain, its similar memories), and every
memory as untrusted text: escaped, never a link, bidi and control characters made visible, a long
text cut in lists."""

from __future__ import annotations

import html
import re
from pathlib import Path

from web_support import memories, page, sign_in

HOSTILE = [
    '<script>alert("x")</script><img src=x onerror=alert(1)>',
    "javascript:alert(document.cookie)",
    "&lt;b&gt;entity&amp;amp; stays text",
    "evil \u202etxt.exe and \u2066isolated",
    "bell\x07 escape\x1b[31m nul-free\x01 del\x7f c1\x85 end",
    "مرحبا بالعالم — שלום — 你好，世界 — こんにちは",
]
LONG = "filler words " * 7_000 + "the needle sits at the very end"  # 91k characters: near the 100k limit


def _store(store: Path, texts: list[str]) -> str:
    with memories(store) as m:
        for text in texts:
            m.add(text, user="alice", tags=["<b>tag</b>"], meta={"<i>key</i>": "javascript:void(0)"})
        return m.tokens.add(user="alice")[0]


def _texts_of(page_html: str) -> list[str]:
    """The texts of the memories shown, unescaped."""
    return [html.unescape(t) for t in re.findall(r'<bdi dir="auto">(.*?)</bdi>', page_html, re.S)]


def test_hostile_texts_are_shown_escaped_and_never_act(store_dir: Path) -> None:
    secret = _store(store_dir, HOSTILE)
    with page(store_dir) as browser:
        sign_in(browser, secret)
        shown = [browser.get("/").text] + [
            browser.get(f"/memories/{i}").text for i in range(1, len(HOSTILE) + 1)
        ]
        shown.append(browser.get("/search", params={"q": "alert javascript evil bell"}).text)
        for text in shown:
            assert (
                "<script" not in text and "<img" not in text and "<b>tag" not in text and "<i>key" not in text
            )
            assert 'href="javascript' not in text.lower()
            assert "\u202e" not in text and "\u2066" not in text  # no bidi control reaches the page
            assert not re.search("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]", text)
        whole = {i: _texts_of(browser.get(f"/memories/{i}").text)[0] for i in range(1, len(HOSTILE) + 1)}
        assert whole[1] == HOSTILE[0] and whole[2] == HOSTILE[1] and whole[3] == HOSTILE[2]
        assert whole[4] == "evil <U+202E>txt.exe and <U+2066>isolated"
        assert whole[5] == "bell\u2407 escape\u241b[31m nul-free\u2401 del\u2421 c1<U+0085> end"
        assert whole[6] == HOSTILE[5]  # right-to-left and CJK text as written, in its own bdi


def test_a_long_text_is_cut_in_lists_and_its_snippet_shown_in_search(store_dir: Path) -> None:
    secret = _store(store_dir, [LONG, "a short one"])
    with page(store_dir) as browser:
        sign_in(browser, secret)
        listed = browser.get("/")
        assert len(listed.text) < 20_000 and "the needle" not in listed.text
        found = browser.get("/search", params={"q": "needle sits", "mode": "keyword"})
        assert "the needle sits at the very end" in found.text and len(found.text) < 20_000
        whole = browser.get("/memories/1")
        assert whole.status_code == 200 and _texts_of(whole.text)[0] == LONG


def test_the_newest_memories_come_a_page_at_a_time(store_dir: Path) -> None:
    secret = _store(store_dir, [f"memory number {i:02d}" for i in range(45)])
    with page(store_dir) as browser:
        sign_in(browser, secret)
        seen: list[str] = []
        path: str | None = "/"
        while path is not None:
            shown = browser.get(path).text
            seen += re.findall(r"memory number \d\d", shown)
            older = re.search(r'href="(/\?cursor=[^"]+)"', shown)
            path = html.unescape(older.group(1)) if older else None
        assert seen == [f"memory number {i:02d}" for i in reversed(range(45))]
        assert browser.get("/?cursor=not-a-cursor").status_code == 400


def test_search_takes_the_filters_within_the_pin(store_dir: Path) -> None:
    with memories(store_dir) as m:
        m.add("the deploy key is blue", user="alice", conversation="c1", role="user", tags=["ops"])
        m.add("the deploy key is green", user="alice", conversation="c2", role="assistant", tags=["dev"])
        secret = m.tokens.add(user="alice")[0]
    with page(store_dir) as browser:
        sign_in(browser, secret)

        def found(**filters: str) -> list[str]:
            text = browser.get("/search", params={"q": "deploy key", **filters}).text
            return re.findall(r"the deploy key is \w+", text)

        assert sorted(found()) == ["the deploy key is blue", "the deploy key is green"]
        assert (
            found(tag="ops") == found(conversation="c1") == found(role="user") == ["the deploy key is blue"]
        )
        assert found(until="2000-01-01") == []
        refused = browser.get("/search", params={"q": "deploy", "since": "not a time"})
        assert refused.status_code == 400 and "since" in refused.text


def test_a_memorys_page_shows_its_fields_history_and_similar_memories(store_dir: Path) -> None:
    with memories(store_dir) as m:
        first = m.add("the office moves to Berlin", user="alice", tags=["office"], meta={"source": "mail"}).id
        second = m.add("the office moves to Hamburg", user="alice", supersedes=first).id
        m.add("the office in Hamburg has a garden", user="alice")
        secret = m.tokens.add(user="alice")[0]
    with page(store_dir) as browser:
        sign_in(browser, secret)
        shown = browser.get(f"/memories/{first}").text
        assert "office" in shown and "source" in shown and "mail" in shown
        assert f'href="/memories/{second}"' in shown  # superseded by
        assert "History" in shown and "the office moves to Hamburg" in shown
        latest = browser.get(f"/memories/{second}").text
        assert "Similar memories" in latest and "has a garden" in latest
