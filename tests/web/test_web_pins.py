"""The page sees exactly what its token's pin sees and does only what it may: a user's token never
sees, finds, exports or changes another user's memories (they are missing: 404); it sees the shared
ones but cannot change them; a read-only token gets no write controls and every write it posts is
refused. On both back-ends."""

from __future__ import annotations

import json
from pathlib import Path

from web_support import memories, page, post, sign_in

from remem import NewMemory

STORE = [
    NewMemory("alice keeps the blue deploy key", user="alice", conversation="c1", tags=("ops",)),
    NewMemory("bob keeps the red deploy key", user="bob", conversation="c1", tags=("ops",)),
    NewMemory("the team deploy key rotates monthly", tags=("ops",)),
]
ALICE, BOB, SHARED = 1, 2, 3


def _fill(store: Path | str) -> dict[str, str]:
    with memories(store) as m:
        m.add_many(STORE)
        return {
            "alice": m.tokens.add(user="alice")[0],
            "alice-ro": m.tokens.add(user="alice", name="alice-ro", read_only=True)[0],
            "admin": m.tokens.add(user=None)[0],
        }


def _snapshot(store: Path | str) -> list[tuple[int, str, str | None, tuple[str, ...], str | None]]:
    with memories(store) as m:
        return [(x.id, x.text, x.user, x.tags, x.superseded_by) for x in m.iter()]


def test_a_users_page_shows_its_own_and_the_shared_memories_never_anothers(either_store: Path | str) -> None:
    tokens = _fill(either_store)
    with page(either_store) as browser:
        sign_in(browser, tokens["alice"])
        listed = browser.get("/").text
        assert "alice keeps the blue" in listed and "the team deploy key" in listed and "bob" not in listed
        for mode in ("hybrid", "keyword", "vector"):
            found = browser.get("/search", params={"q": "bob keeps the red deploy key", "mode": mode})
            assert found.status_code == 200 and f'href="/memories/{BOB}"' not in found.text, mode
            assert f'href="/memories/{ALICE}"' in found.text, mode
        assert browser.get(f"/memories/{ALICE}").status_code == 200
        shared = browser.get(f"/memories/{SHARED}")
        assert shared.status_code == 200 and "/edit" not in shared.text  # seen, not changeable
        missing, hidden = browser.get("/memories/999"), browser.get(f"/memories/{BOB}")
        assert hidden.status_code == missing.status_code == 404 and "red deploy" not in hidden.text
        assert hidden.text == missing.text
        assert "red deploy" not in browser.get(f"/memories/{ALICE}").text  # not among the similar ones
        exported = [json.loads(line)["text"] for line in browser.get("/export.jsonl").text.splitlines()]
        assert sorted(exported) == ["alice keeps the blue deploy key", "the team deploy key rotates monthly"]
        # The filters cannot reach past the pin: the user field is not even offered.
        assert 'name="user"' not in listed
        widened = browser.get("/search", params={"q": "deploy", "user": "bob"}).text
        assert f'href="/memories/{BOB}"' not in widened and f'href="/memories/{ALICE}"' in widened


def test_a_users_page_changes_only_its_own_memories(either_store: Path | str) -> None:
    tokens = _fill(either_store)
    before = _snapshot(either_store)
    with page(either_store) as browser:
        sign_in(browser, tokens["alice"])
        for memory_id in (BOB, 999):
            assert (
                post(browser, f"/memories/{memory_id}/edit", text="mine now", tags="", meta="").status_code
                == 404
            )
            assert post(browser, f"/memories/{memory_id}/forget").status_code == 404
            assert post(browser, f"/memories/{memory_id}/supersede", text="bob was wrong").status_code == 400
            assert browser.get(f"/memories/{memory_id}/forget").status_code == 404
        refused = post(browser, f"/memories/{SHARED}/forget")
        assert refused.status_code == 400 and "shared memory" in refused.text
    assert _snapshot(either_store) == before


def test_a_read_only_token_gets_no_write_controls_and_its_writes_are_refused(
    either_store: Path | str,
) -> None:
    tokens = _fill(either_store)
    before = _snapshot(either_store)
    with page(either_store) as browser:
        sign_in(browser, tokens["alice-ro"])
        for path in ("/", f"/memories/{ALICE}", "/search?q=deploy"):
            shown = browser.get(path)
            assert shown.status_code == 200 and "read-only" in shown.text
            for control in ('action="/add"', "/edit", "/forget", "/supersede"):
                assert control not in shown.text, (path, control)
        writes = [
            post(browser, "/add", text="written by a read-only token"),
            post(browser, f"/memories/{ALICE}/edit", text="changed", tags="", meta=""),
            post(browser, f"/memories/{ALICE}/supersede", text="corrected"),
            post(browser, f"/memories/{ALICE}/forget"),
            browser.get(f"/memories/{ALICE}/edit"),
            browser.get(f"/memories/{ALICE}/forget"),
        ]
        assert [answer.status_code for answer in writes] == [403] * 6
    assert _snapshot(either_store) == before


def test_an_admin_token_sees_and_changes_everything(either_store: Path | str) -> None:
    tokens = _fill(either_store)
    with page(either_store) as browser:
        sign_in(browser, tokens["admin"])
        listed = browser.get("/").text
        assert all(memory.text in listed for memory in STORE) and 'name="user"' in listed
        found = browser.get("/search", params={"q": "deploy key", "user": "bob"}).text
        assert "bob keeps the red" in found and "alice keeps" not in found
        assert post(browser, f"/memories/{BOB}/forget").status_code == 200
    assert [row[0] for row in _snapshot(either_store)] == [ALICE, SHARED]
