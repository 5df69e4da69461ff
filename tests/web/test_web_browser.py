"""The page in a real browser: headless Chromium (Debian's ``chromium``, installed when missing on a
Debian machine where the tests run as root, as CI does) driven by Playwright against ``remem serve``
on a free port, on local and PostgreSQL stores: sign-in, search, open, edit, supersede, forget, add,
what was remembered recently and by whom (filtered by writer, within the pin), a read-only token's
page, another user's memory, hostile texts that never run, sign-out.

``REMEM_UPDATE_SCREENSHOTS=1`` writes the screenshots docs/ui.md shows (from the local store)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from web_support import memories

from remem import NewMemory
from serve_support import serving

pytestmark = pytest.mark.slow

DOCS = Path(__file__).resolve().parents[2] / "docs"
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> javascript:alert(2)'
STORE = [
    NewMemory("alice keeps the blue deploy key in the vault", user="alice", tags=("ops",)),
    NewMemory("bob keeps the red deploy key", user="bob", written_by="bob"),
    NewMemory("the team deploy key rotates monthly", tags=("ops",), written_by="cli"),
    NewMemory(HOSTILE, user="alice"),
    NewMemory("مرحبا \u202eevil.exe — 你好，世界", user="alice", meta={"source": "chat"}),
]
ALICE, BOB = 1, 2


def _chromium() -> str:
    """Debian's Chromium, installed when missing where that can be done; else the test is skipped."""
    pytest.importorskip("playwright.sync_api", reason="Playwright for Python is not installed")
    found = shutil.which("chromium")
    if found is None and os.geteuid() == 0 and Path("/etc/debian_version").exists():
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=False, env=env, capture_output=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "chromium"], check=False, env=env, capture_output=True
        )
        found = shutil.which("chromium")
    if found is None:
        pytest.skip("no chromium, and it cannot be installed here (needs root on Debian)")
    return found


@pytest.fixture
def browser() -> Iterator[Any]:
    """A headless Chromium."""
    executable = _chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


#: The messages of every dialog (alert, confirm) a page opened: a memory that ran would open one.
DIALOGS: list[str] = []


def _sign_in(browser: Any, base: str, secret: str) -> Any:
    page = browser.new_context(viewport={"width": 1100, "height": 800}).new_page()
    page.on("dialog", lambda dialog: (DIALOGS.append(dialog.message), dialog.dismiss()))
    page.goto(base + "/")
    assert page.url == base + "/signin"
    page.fill("#token", secret)
    page.get_by_role("button", name="Sign in").click()
    assert page.url == base + "/" and secret not in page.url
    return page


def _shot(page: Any, name: str, store: Path | str) -> None:
    if os.environ.get("REMEM_UPDATE_SCREENSHOTS") and isinstance(store, Path):
        page.screenshot(path=str(DOCS / name), full_page=True)


def _recently_remembered(page: Any, base: str, store: Path | str) -> None:
    """Add a memory on the page, then find it first in what was remembered recently, named after the
    token; filter by a writer; another user's writer shows nothing of theirs."""
    page.goto(base + "/")
    page.locator("summary", has_text="Add a memory").click()
    page.fill("#add-text", "alice added this on the page")
    page.get_by_role("button", name="Add", exact=True).click()
    page.get_by_role("link", name="Recently remembered").click()
    assert page.url == base + "/recent"
    rows = page.locator("table.recent tbody tr")
    assert (
        "alice-browser" in rows.nth(0).inner_text() and "added this on the page" in rows.nth(0).inner_text()
    )
    assert "bob keeps" not in page.inner_text("main")
    _shot(page, "ui-recent.png", store)
    page.get_by_role("link", name="cli").first.click()
    assert page.url == base + "/recent?writer=cli"
    assert [row.locator("td.writer").inner_text() for row in rows.all()] == ["cli"]
    page.fill("#f-writer", "bob")
    page.get_by_role("button", name="Show").click()
    assert rows.count() == 0 and "bob keeps" not in page.inner_text("main")


def test_the_page_in_a_browser(either_store: Path | str, browser: Any) -> None:
    with memories(either_store) as m:
        m.add_many(STORE)
        alice = m.tokens.add(user="alice", name="alice-browser")[0]
        read_only = m.tokens.add(user="alice", name="alice-ro", read_only=True)[0]
    with serving(either_store) as server:
        base = server.url.removesuffix("/mcp")
        page = _sign_in(browser, base, alice)
        listed = page.inner_text("main")
        assert HOSTILE in listed and "bob keeps" not in listed and "the team deploy key" in listed
        assert page.locator("script").count() == 0 and page.locator("main img").count() == 0
        _shot(page, "ui-newest.png", either_store)
        page.fill("#q", "blue vault")
        page.press("#q", "Enter")
        assert "alice keeps the blue deploy key" in page.inner_text("main")
        _shot(page, "ui-search.png", either_store)
        page.click(f'a[href="/memories/{ALICE}"]')
        assert page.url == f"{base}/memories/{ALICE}" and "Similar memories" in page.inner_text("main")
        _shot(page, "ui-memory.png", either_store)
        page.get_by_role("link", name="Edit").click()
        page.fill("#e-text", "alice keeps the blue deploy key in the safe")
        page.fill("#e-tags", "ops, keys")
        page.get_by_role("button", name="Save").click()
        assert "in the safe" in page.inner_text("main") and "keys" in page.inner_text("main")
        page.fill("#correction", "alice keeps the green deploy key in the safe")
        page.get_by_role("button", name="Supersede").click()
        newer = page.url.rsplit("/", 1)[1]
        assert newer != str(ALICE) and "green deploy key" in page.inner_text("main")
        page.get_by_role("link", name="Forget").click()
        assert "green deploy key" in page.inner_text("main")
        _shot(page, "ui-forget.png", either_store)
        page.get_by_role("button", name=f"Forget memory {newer}").click()
        assert "is forgotten" in page.inner_text("main")
        _recently_remembered(page, base, either_store)
        page.goto(f"{base}/memories/{BOB}")
        assert "there is no such memory" in page.inner_text("main")
        page.get_by_role("button", name="Sign out").click()
        assert page.url == base + "/signin"
        page.goto(base + "/")
        assert page.url == base + "/signin"
        assert DIALOGS == []
        reader = _sign_in(browser, base, read_only)
        assert "read-only" in reader.inner_text("header")
        assert reader.locator("form[action='/add']").count() == 0
        reader.goto(f"{base}/memories/{ALICE}")
        assert reader.get_by_role("link", name="Edit").count() == 0
        assert reader.locator("#correction").count() == 0
    with memories(either_store) as m:
        assert m.get(ALICE).text == "alice keeps the blue deploy key in the safe"
        assert int(newer) not in m.get_many([int(newer)])
