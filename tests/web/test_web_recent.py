"""The page's "Recently remembered" view (``/recent``): the newest memories with who wrote them (a
token's name, ``cli``…), filtered by writer, always within the signed-in token's pin — a member
never sees, even filtering by another's writer, a memory outside its pin. What the page adds names
its token; a memory's page says who wrote it."""

from __future__ import annotations

import re
from pathlib import Path

from web_support import memories, page, post, sign_in

from remem import NewMemory

STORE = [
    NewMemory("alice keeps the blue deploy key", user="alice", written_by="alice"),
    NewMemory("bob keeps the red deploy key", user="bob", written_by="bob"),
    NewMemory("the team deploy key rotates monthly", written_by="admin"),
    NewMemory("admin noted bob's parking spot", user="bob", written_by="admin"),
    NewMemory("a note from the command line", user="alice", written_by="cli"),
    NewMemory("a memory from before writers were recorded", user="alice"),
]
ALICE, BOB, SHARED, ADMIN_FOR_BOB, CLI, UNKNOWN = range(1, 7)


def _fill(store: Path | str) -> dict[str, str]:
    with memories(store) as m:
        m.add_many(STORE)
        return {
            "alice": m.tokens.add(user="alice")[0],
            "bob": m.tokens.add(user="bob")[0],
            "admin": m.tokens.add(user=None)[0],
        }


def _rows(html: str) -> list[tuple[int, str]]:
    """(memory id, writer as shown) of each row of the view, in order."""
    rows = re.findall(r'<td class="writer">(.*?)</td>\s*<td><a href="/memories/(\d+)"', html, re.S)
    return [(int(memory_id), re.sub(r"<[^>]+>", "", writer)) for writer, memory_id in rows]


def test_recent_shows_the_newest_with_their_writers_within_the_pin(either_store: Path | str) -> None:
    tokens = _fill(either_store)
    with page(either_store) as browser:
        sign_in(browser, tokens["alice"])
        shown = browser.get("/recent")
        assert shown.status_code == 200 and "Recently remembered" in shown.text
        assert _rows(shown.text) == [
            (UNKNOWN, "(unknown)"),
            (CLI, "cli"),
            (SHARED, "admin"),
            (ALICE, "alice"),
        ]
        assert 'href="/recent?writer=cli"' in shown.text
        assert _rows(browser.get("/recent", params={"writer": "cli"}).text) == [(CLI, "cli")]
        assert _rows(browser.get("/recent", params={"writer": "admin"}).text) == [(SHARED, "admin")]
        nothing = browser.get("/recent", params={"writer": "bob"})  # bob's writes are all outside the pin
        assert _rows(nothing.text) == [] and "bob keeps" not in nothing.text
    with page(either_store) as browser:
        sign_in(browser, tokens["bob"])
        assert _rows(browser.get("/recent", params={"writer": "admin"}).text) == [
            (ADMIN_FOR_BOB, "admin"),
            (SHARED, "admin"),
        ]
        assert _rows(browser.get("/recent", params={"writer": "alice"}).text) == []
    with page(either_store) as browser:
        sign_in(browser, tokens["admin"])
        assert [row[0] for row in _rows(browser.get("/recent").text)] == list(range(6, 0, -1))


def test_what_the_page_adds_names_its_token_and_a_memorys_page_says_who_wrote_it(
    either_store: Path | str,
) -> None:
    tokens = _fill(either_store)
    with page(either_store) as browser:
        sign_in(browser, tokens["alice"])
        assert post(browser, "/add", text="added on the page", tags="").status_code == 303
        assert _rows(browser.get("/recent").text)[0] == (7, "alice")
        assert "<dt>Written by</dt><dd><bdi>alice</bdi></dd>" in browser.get("/memories/7").text
        assert "<dt>Written by</dt><dd><bdi>(unknown)</bdi></dd>" in browser.get(f"/memories/{UNKNOWN}").text
        assert 'class="writer">by <bdi>cli</bdi>' in browser.get("/").text
    with memories(either_store) as m:
        assert m.get(7).written_by == "alice"


def test_recent_pages_keep_the_writer_and_escape_what_they_show(store_dir: Path) -> None:
    hostile = '<script>alert("x")</script>'
    with memories(store_dir) as m:
        m.add_many([NewMemory(f"note {n}", written_by=hostile) for n in range(25)])
        secret = m.tokens.add(user=None)[0]
    with page(store_dir) as browser:
        sign_in(browser, secret)
        first = browser.get("/recent", params={"writer": hostile})
        assert len(_rows(first.text)) == 20 and "<script>" not in first.text
        older = re.search(r'href="(/recent\?writer=[^"]+&amp;cursor=[^"]+)"', first.text)
        assert older, first.text[-800:]
        second = browser.get(older.group(1).replace("&amp;", "&"))
        assert [row[0] for row in _rows(second.text)] == [5, 4, 3, 2, 1]
        assert browser.get("/recent", params={"cursor": "not-a-cursor"}).status_code == 400
