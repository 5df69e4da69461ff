"""``remem ui``: the page on 127.0.0.1 for the store's owner, signed in once with the one-time code
of the URL it prints (as Jupyter does); the code is exchanged for a session cookie and the browser sent
on to a URL without it; a used or wrong code signs nobody in."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from web_support import memories, page, post

from remem import NewMemory

CODE = "one-time-code-for-the-test"


def _fill(store: Path) -> None:
    with memories(store) as m:
        m.add_many(
            [
                NewMemory("alice keeps the blue key", user="alice"),
                NewMemory("bob keeps the red key", user="bob"),
            ]
        )


def test_the_one_time_code_signs_in_once_as_the_stores_owner(store_dir: Path) -> None:
    _fill(store_dir)
    with page(store_dir, code=CODE) as browser:
        assert browser.get("/signin", params={"code": "wrong"}).status_code == 401
        assert browser.get("/").status_code == 303
        answer = browser.get("/signin", params={"code": CODE})
        assert answer.status_code == 303 and answer.headers["location"] == "/"
        assert "HttpOnly" in answer.headers["set-cookie"] and CODE not in answer.headers["set-cookie"]
        listed = browser.get("/").text
        assert "on this computer" in listed and "alice keeps" in listed and "bob keeps" in listed
        assert 'action="/add"' in listed
        assert post(browser, "/add", text="added from the page").status_code == 303
        assert post(browser, "/signout").status_code == 303
        assert browser.get("/signin", params={"code": CODE}).status_code == 401  # used up
        assert browser.get("/").status_code == 303
    with memories(store_dir) as m:
        assert {x.text: x.written_by for x in m.iter()}["added from the page"] == "ui"  # no token: ui


def test_serve_has_no_code_to_sign_in_with(store_dir: Path) -> None:
    _fill(store_dir)
    with page(store_dir) as browser:
        for code in ("", "None", CODE):
            assert browser.get("/signin", params={"code": code}).status_code == 401


@pytest.mark.slow
def test_remem_ui_prints_a_url_that_signs_in_once(store_dir: Path) -> None:
    _fill(store_dir)
    command = [sys.executable, "-m", "remem", "--store", str(store_dir), "ui", "--port", "0"]
    process = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    try:
        assert process.stderr is not None
        said = [process.stderr.readline() for _ in range(1)]
        while "remem ui: http" not in said[-1] and said[-1] and len(said) < 20:
            said.append(process.stderr.readline())
        found = re.search(r"remem ui: (http://127\.0\.0\.1:\d+/signin\?code=\S+)", said[-1])
        assert found, said
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with browser.open(found.group(1), timeout=60) as answer:
            assert answer.url.endswith("/") and "code=" not in answer.url
            assert "bob keeps the red key" in answer.read().decode()
        stranger = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with pytest.raises(urllib.error.HTTPError) as refused:
            stranger.open(found.group(1), timeout=60)
        assert refused.value.code == 401
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
