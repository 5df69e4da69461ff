"""The page's writes, through the MCP tools' own functions: add a memory, edit its text, tags and
metadata, supersede it with a correction, forget it after a confirmation that shows it; on both
back-ends."""

from __future__ import annotations

import re
from pathlib import Path

from web_support import memories, page, post, sign_in


def test_add_edit_supersede_and_forget(either_store: Path | str) -> None:
    with memories(either_store) as m:
        secret = m.tokens.add(user="alice")[0]
    with page(either_store) as browser:
        sign_in(browser, secret)
        added = post(browser, "/add", text="the standup is at nine", tags="team, daily")
        assert added.status_code == 303
        memory_id = int(re.fullmatch(r"/memories/(\d+)", added.headers["location"]).group(1))
        form = browser.get(f"/memories/{memory_id}/edit")
        assert form.status_code == 200 and "the standup is at nine" in form.text
        edited = post(
            browser, f"/memories/{memory_id}/edit", text="the standup is at ten", tags="team", meta="room=4\n"
        )
        assert edited.status_code == 303
        with memories(either_store) as m:
            memory = m.get(memory_id)
            assert (memory.text, memory.user, memory.tags, memory.meta) == (
                "the standup is at ten",
                "alice",
                ("team",),
                {"room": "4"},
            )
        bad = post(browser, f"/memories/{memory_id}/edit", text="x", tags="", meta="no equals sign")
        assert bad.status_code == 400 and "key=value" in bad.text
        corrected = post(browser, f"/memories/{memory_id}/supersede", text="the standup is at half past ten")
        newer = int(corrected.headers["location"].rsplit("/", 1)[1])
        with memories(either_store) as m:
            assert m.get(memory_id).superseded_by == newer and m.get(newer).user == "alice"
        confirm = browser.get(f"/memories/{newer}/forget")
        assert confirm.status_code == 200 and "the standup is at half past ten" in confirm.text
        assert f'action="/memories/{newer}/forget"' in confirm.text
        assert post(browser, f"/memories/{newer}/forget").status_code == 200
        with memories(either_store) as m:
            assert [x.id for x in m.iter()] == [memory_id]
        assert browser.get(f"/memories/{newer}").status_code == 404
        refused = post(browser, "/add", text="   ")
        assert refused.status_code == 400 and "Traceback" not in refused.text
