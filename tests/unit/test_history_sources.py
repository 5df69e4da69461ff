"""Reading other tools' histories (issue 52): a ChatGPT export's shown branch, Claude's content
blocks, a folder of Markdown notes, what each skips and counts, and the inputs that are refused in
one line naming the file. The fixtures (tests/data/history) are our own, in the shapes of the real
exports; the CLI and the stores are in tests/cli/test_import_chat_history.py."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

import remem
from remem.core.sources import frontmatter
from remem.errors import InvalidInputError
from remem.ingest import Entry

DATA = Path(__file__).parent.parent / "data" / "history"


def _read(source: str, path: Path | str) -> tuple[list[Entry], remem.History]:
    history = remem.read_history(source, path)
    return list(history.entries()), history


def _export(tmp_path: Path, conversations: list[Any], name: str = "conversations.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(conversations), encoding="utf-8")
    return path


def _chatgpt() -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = json.loads((DATA / "chatgpt.json").read_text(encoding="utf-8"))
    return loaded


def test_chatgpt_follows_the_branch_the_page_shows_oldest_first() -> None:
    entries, _ = _read("chatgpt", DATA / "chatgpt.json")
    lisbon = [e.memory for e in entries if e.memory.conversation == "6650a1b2-lisbon"]
    texts = [m.text for m in lisbon]
    assert "What about a day trip to Sintra by train from Rossio?" in texts  # the edited message
    assert "What about a day trip to Sintra?" not in texts and "Sintra is lovely, go early." not in texts
    assert [m.role for m in lisbon] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "assistant",
    ]
    assert [m.created_at for m in lisbon] == sorted(m.created_at or "" for m in lisbon)
    assert lisbon[0].created_at == "2024-05-01T08:00:00.000Z"
    assert dict(lisbon[2].meta) == {"source_id": "u2e", "title": "Trip to Lisbon"}
    assert all(m.tags == ("source:chatgpt",) for m in lisbon)
    # a multimodal message keeps its words, not its image
    assert texts[4] == "Here is a photo of the blue tiles I liked. What style is this?"


def test_chatgpt_counts_what_it_skips() -> None:
    entries, history = _read("chatgpt", DATA / "chatgpt.json")
    assert len(entries) == 9 and [e.line for e in entries] == list(range(1, 10))
    assert history.skipped == {
        "empty nodes": 2,
        "system messages": 1,
        "attachments": 1,
        "images and files": 1,
        "code and tool calls": 1,
        "tool messages": 1,
        "empty messages": 1,
    }
    assert history.notes == []


def test_chatgpt_without_a_current_node_follows_the_last_child(tmp_path: Path) -> None:
    conversations = _chatgpt()
    del conversations[0]["current_node"]
    path = _export(tmp_path, conversations)
    texts = [e.memory.text for e in _read("chatgpt", path)[0]]
    assert "What about a day trip to Sintra by train from Rossio?" in texts  # u2e: a1's last child


def test_an_unknown_chatgpt_content_type_is_skipped_with_a_line_naming_the_file_and_path(
    tmp_path: Path,
) -> None:
    conversations = _chatgpt()
    conversations[0]["mapping"]["a3"]["message"]["content"] = {"content_type": "hologram", "parts": ["x"]}
    path = _export(tmp_path, conversations)
    entries, history = _read("chatgpt", path)
    assert "Those are azulejos, painted tin-glazed ceramic tiles." not in [e.memory.text for e in entries]
    assert history.skipped["messages of unknown content types"] == 1
    assert history.notes == [
        f"{path}: [0].mapping[\"a3\"].message.content.content_type: 'hologram' is not a content type "
        "remem knows; skipped"
    ]


def test_chatgpt_markers_are_read_as_the_page_shows_them(tmp_path: Path) -> None:
    """ChatGPT writes private-use markers into answers (web citations, entity links, the bounds of
    a cited passage): a citation is left out, an entity is its name, a link its text."""
    conversations = _chatgpt()
    conversations[0]["mapping"]["a3"]["message"]["content"]["parts"] = [
        "\ue203Those are azulejos\ue204\ue206 \ue200cite\ue202turn0search0\ue202turn0search3\ue201, "
        'from \ue200entity\ue202["place","Portugal","country"]\ue201; see '
        "\ue200url\ue202the tile museum\ue202https://example.org/azulejo\ue201 "
        "\ue200cite\ue202turn1view0\ue201."
    ]
    path = _export(tmp_path, conversations)
    texts = [e.memory.text for e in _read("chatgpt", path)[0]]
    assert "Those are azulejos, from Portugal; see the tile museum." in texts


def test_claude_maps_senders_and_keeps_only_text_blocks() -> None:
    entries, history = _read("claude", DATA / "claude.json")
    memories = [e.memory for e in entries]
    assert [(m.role, m.text[:20]) for m in memories] == [
        ("user", "My sourdough starter"),
        ("assistant", "Not dead: an acetone"),
        ("user", "Here is my feeding s"),
        ("assistant", "That schedule works;"),  # no content blocks: its text
        ("user", "Where did I leave th"),
        ("assistant", "You said it is in th"),  # its thinking left out
    ]
    assert memories[1].text.endswith("for three days.") and "web_search" not in memories[1].text
    assert (
        memories[0].conversation == "4d2b6f1e-bread" and memories[0].created_at == "2024-09-14T18:02:11.481Z"
    )
    assert dict(memories[0].meta) == {"source_id": "m1", "title": "Sourdough starter"}
    assert dict(memories[4].meta) == {"source_id": "k1"}  # an untitled conversation
    assert all(m.tags == ("source:claude",) for m in memories)
    assert history.skipped == {
        "tool calls and results": 2,
        "attachments and files": 2,
        "empty messages": 1,
        "reasoning": 1,
    }


def test_an_unknown_claude_block_is_skipped_with_a_line_naming_it(tmp_path: Path) -> None:
    conversations = json.loads((DATA / "claude.json").read_text(encoding="utf-8"))
    conversations[1]["chat_messages"][1]["content"].append({"type": "hologram"})
    path = _export(tmp_path, conversations)
    entries, history = _read("claude", path)
    assert len(entries) == 6  # the message keeps its text block
    assert history.notes == [
        f"{path}: [1].chat_messages[1].content[2].type: 'hologram' is not a content block remem knows; "
        "skipped"
    ]


def test_claude_tool_results_voice_notes_and_odd_blocks(tmp_path: Path) -> None:
    """A message of nothing but a tool result (what Claude's export holds after each tool call) is
    counted as that, not also as an empty message; a voice note is its transcript; a block whose
    type is not a string is an unknown block, not a crash."""
    messages = [
        {"uuid": "v1", "sender": "human", "content": [{"type": "voice_note", "transcript": "Hi"}]},
        {"uuid": "t1", "sender": "assistant", "content": [{"type": "tool_use", "name": "calc"}]},
        {"uuid": "t2", "sender": "human", "text": "", "content": [{"type": "tool_result"}]},
        {"uuid": "e1", "sender": "assistant", "text": "", "content": []},
        {"uuid": "o1", "sender": "assistant", "content": [{"type": ["x"]}, {"type": "text", "text": "42"}]},
    ]
    conversation = {"uuid": "c", "created_at": "2024-01-01T00:00:00Z", "chat_messages": messages}
    path = _export(tmp_path, [conversation])  # its messages take the conversation's time
    entries, history = _read("claude", path)
    assert [(e.memory.role, e.memory.text) for e in entries] == [("user", "Hi"), ("assistant", "42")]
    assert history.skipped == {
        "tool calls and results": 2,
        "empty messages": 1,
        "content blocks of unknown types": 1,
    }
    assert history.notes == [
        f"{path}: [0].chat_messages[4].content[0].type: None is not a content block remem knows; skipped"
    ]


def test_markdown_notes_sections_tags_links_and_times() -> None:
    entries, history = _read("markdown", DATA / "notes")
    by_id = {e.memory.meta["source_id"]: e.memory for e in entries}
    assert list(by_id) == [
        "broken.md",
        "money/budget.md#1",
        "money/budget.md#2",
        "money/budget.md#3",
        "trips/lisbon.md",
        "東京メモ.md",
    ]  # path order; .obsidian left out; empty.md skipped and counted
    lisbon = by_id["trips/lisbon.md"]
    assert lisbon.text.startswith("Stayed in Alfama") and "aliases" not in lisbon.text
    assert lisbon.tags == ("portugal", "source:markdown", "travel")
    assert dict(lisbon.meta) == {
        "path": "trips/lisbon.md",
        "title": "Lisbon, May 2024",
        "source_id": "trips/lisbon.md",
        "links": '["Sintra", "Azulejos", "../money/budget.md"]',
    }
    mtime = (DATA / "notes" / "trips" / "lisbon.md").stat().st_mtime
    assert lisbon.created_at == datetime.fromtimestamp(mtime, tz=timezone.utc).isoformat(
        timespec="milliseconds"
    ).replace("+00:00", "Z")
    sections = [by_id[f"money/budget.md#{n}"] for n in (1, 2, 3)]
    assert [s.meta["section"] for s in sections] == ["Rent", "Groceries", "Savings"]
    assert {s.meta["title"] for s in sections} == {"Household budget"}
    assert sections[0].tags == ("budget", "money", "source:markdown")  # a comma-separated string
    assert "# not a heading" in sections[1].text  # a comment in a code block does not split
    assert by_id["東京メモ.md"].meta["title"] == "東京旅行"
    assert history.skipped == {"empty notes": 1}


def test_a_front_matter_it_cannot_read_is_kept_as_text_with_a_line_naming_the_file() -> None:
    entries, history = _read("markdown", DATA / "notes")
    broken = next(e.memory for e in entries if e.memory.meta["path"] == "broken.md")
    assert broken.text.startswith("---\ntitle: Broken front matter") and broken.meta["title"] == "broken"
    assert history.notes == [
        f"{DATA / 'notes'}/broken.md: line 3: not a `key: value` line: a front matter remem does not "
        "read; the note is kept as text"
    ]


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("---\ntitle: 'A: note'\ntags: [a, \"b c\"]\n---\nbody", {"title": "A: note", "tags": ["a", "b c"]}),
        (
            "---\ntags:\n  - a\n  - b\n# a comment\n\nx: 1 # trailing\n---\nbody",
            {"tags": ["a", "b"], "x": "1"},
        ),
        ("---\nmeta:\n  nested: map\n  other: 2\ntitle: T\n---\nbody", {"meta": None, "title": "T"}),
        ("no front matter\n---\n", {}),
    ],
)
def test_the_front_matter_subset(text: str, fields: dict[str, Any]) -> None:
    assert frontmatter.split(text).fields == fields


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("---\ntitle: x\n", 1),  # never closed
        ("---\ntitle: x\n  - stray\n---\n", 3),
        ("---\n  - item\n---\n", 2),
        ("---\ntitle: x\nkey = value\n---\n", 3),
        ("---\ntags: [a, b\n---\n", 2),  # YAML refuses a list never closed (was tags "[a", "b")
        ("---\nmeta: {a: 1\n---\n", 2),
    ],
)
def test_a_front_matter_outside_the_subset_names_its_line(text: str, line: int) -> None:
    with pytest.raises(frontmatter.FrontMatterError) as raised:
        frontmatter.split(text)
    assert raised.value.line == line


def _bad(tmp_path: Path, kind: str) -> tuple[str, Path, str]:
    """(source, path, what the error says) for one kind of bad input."""
    chatgpt = (DATA / "chatgpt.json").read_text(encoding="utf-8")
    files = {
        "jsonl": (
            "chatgpt",
            '{"text": "a remem export line"}\n',
            "a JSON object or JSON Lines, not the JSON array",
        ),
        "truncated": (
            "chatgpt",
            chatgpt[: len(chatgpt) // 2],
            "not valid JSON in conversation [0]: the file ends inside it (a truncated file?)",
        ),
        "truncated-later": (
            "chatgpt",
            chatgpt[: chatgpt.index('"6650c3d4-garden"') + 40],
            "not valid JSON in conversation [1]: the file ends inside it (a truncated file?)",
        ),
        "claude-as-chatgpt": (
            "chatgpt",
            (DATA / "claude.json").read_text(encoding="utf-8"),
            ": [0] has no mapping of messages: not a ChatGPT export (a Claude export is read with "
            "source claude)",
        ),
        "chatgpt-as-claude": ("claude", chatgpt, ": [0] has no chat_messages: not a Claude export"),
        "strings": ("claude", '["a", "b"]', ": [0] is not an object: not a Claude export"),
        "empty": ("chatgpt", "  \n", ": empty; a ChatGPT export's conversations.json is a JSON array"),
        "zip": ("chatgpt", "PK\x03\x04 a zip", ": a zip archive; unzip the ChatGPT export and give its"),
        "binary": ("claude", "\x00\x01 data", ": not JSON, not the JSON array of conversations"),
        "deep": ("claude", "[" * 100_000, ": conversation [0] nests more than 512 deep"),
        "trailing": (
            "claude",
            "[] and more",
            ": not valid JSON in conversation [0]: parse error: trailing garbage",
        ),
    }
    if kind == "directory":
        return "chatgpt", tmp_path, ": a directory; source chatgpt reads the export's conversations.json"
    if kind == "file-for-markdown":
        return "markdown", DATA / "chatgpt.json", ": not a directory; source markdown reads a folder of notes"
    if kind == "missing":
        return "claude", tmp_path / "nothing.json", ": no such file"
    if kind == "stdin":
        return "chatgpt", Path("-"), ": stdin; source chatgpt reads a file, the export's conversations.json"
    if kind == "not-utf-8":
        path = tmp_path / "latin1.json"
        path.write_bytes(chatgpt.replace("Príncipe", "Pr\xedncipe").encode("latin-1", "replace"))
        return (
            "chatgpt",
            path,
            ": not valid JSON in conversation [0]: lexical error: invalid bytes in UTF8 string.",
        )
    source, content, says = files[kind]
    path = tmp_path / f"{kind}.json"
    path.write_text(content, encoding="utf-8")
    return source, path, says


@pytest.mark.parametrize(
    "kind",
    [
        "jsonl",
        "truncated",
        "truncated-later",
        "claude-as-chatgpt",
        "chatgpt-as-claude",
        "strings",
        "empty",
        "zip",
        "binary",
        "deep",
        "trailing",
        "not-utf-8",
        "directory",
        "file-for-markdown",
        "missing",
        "stdin",
    ],
)
def test_an_input_of_another_shape_is_one_line_naming_the_file(tmp_path: Path, kind: str) -> None:
    source, path, says = _bad(tmp_path, kind)
    with pytest.raises(InvalidInputError) as raised:
        _read(source, path)
    message = str(raised.value)
    assert message.startswith(str(path)) and says in message and "\n" not in message, message


def test_an_unknown_source_is_refused() -> None:
    with pytest.raises(
        InvalidInputError, match="unknown source 'gemini'; choose one of chatgpt, claude, markdown"
    ):
        remem.read_history("gemini", DATA)


def test_a_message_remem_would_refuse_is_skipped_and_noted(tmp_path: Path) -> None:
    conversations = _chatgpt()
    conversations[1]["mapping"]["q1"]["message"]["content"]["parts"] = ["x" * 50]
    path = _export(tmp_path, conversations)
    history = remem.read_history("chatgpt", path, max_chars=40)
    texts = [e.memory.text for e in history.entries()]
    assert "x" * 50 not in texts and history.skipped["refused texts"] >= 1
    assert f'{path}: [1].mapping["q1"].message: skipped: the text has 50 characters' in "\n".join(
        history.notes
    )


def test_a_note_that_is_not_utf8_or_too_big_is_skipped_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from remem.core.sources import markdown

    (tmp_path / "latin1.md").write_bytes("café au lait".encode("latin-1"))
    (tmp_path / "big.md").write_text("x" * 200, encoding="utf-8")
    (tmp_path / "good.md").write_text("The boiler is serviced in March.", encoding="utf-8")
    monkeypatch.setattr(markdown, "MAX_FILE_BYTES", 100)
    entries, history = _read("markdown", tmp_path)
    assert [e.memory.text for e in entries] == ["The boiler is serviced in March."]
    assert history.skipped == {"files over 64 MB": 1, "unreadable files": 1}
    assert history.notes == [
        f"{tmp_path}/big.md: skipped: 200 bytes, more than a note's 100",
        f"{tmp_path}/latin1.md: skipped: not UTF-8",
    ]


@pytest.mark.parametrize("name", ["chatgpt.json", "claude.json"])
def test_the_streamed_conversations_are_the_files_json(name: str) -> None:
    from remem.core.sources.arrays import conversations

    streamed = [conversation for _, conversation in conversations(DATA / name, name, "test")]
    assert streamed == json.loads((DATA / name).read_text(encoding="utf-8"))


def test_too_deep_a_conversation_is_named_by_its_place(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('[{"uuid": "a", "chat_messages": []}, ' + "[" * 600 + "]" * 600 + "]", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"deep.json: conversation \[1\] nests more than 512 deep"):
        _read("claude", path)


def test_a_note_linked_from_outside_the_folder_is_skipped_and_named(tmp_path: Path) -> None:
    """A cloned notes folder (a docs repo) may hold a link to ~/.ssh/…: only files inside the
    folder are read; a link to one of them is read as that note."""
    secret = tmp_path / "secret.txt"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----", encoding="utf-8")
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "kept.md").write_text("# Kept\nA note inside the folder.", encoding="utf-8")
    (notes / "key.md").symlink_to(secret)
    (notes / "sub" / "again.md").symlink_to(notes / "kept.md")
    entries, history = _read("markdown", notes)
    assert sorted(str(e.memory.meta["path"]) for e in entries) == ["kept.md", "sub/again.md"]
    assert not any("PRIVATE KEY" in e.memory.text for e in entries)
    assert history.skipped == {"links to files outside the folder": 1}
    assert history.notes == [f"{notes}/key.md: skipped: a link to a file outside {notes}"]


@pytest.mark.parametrize("source", ["chatgpt", "claude"])
def test_a_message_without_a_readable_time_is_kept_and_named(tmp_path: Path, source: str) -> None:
    if source == "claude":
        conversation: dict[str, Any] = {
            "uuid": "c1",
            "chat_messages": [{"sender": "human", "text": "hello there", "created_at": "not a date"}],
        }
        where = "[0].chat_messages[0]"
    else:
        message = {
            "id": "m1",
            "author": {"role": "user"},
            "content": {"content_type": "text", "parts": ["hello there"]},
            "create_time": "yesterday",
        }
        node = {"id": "n1", "message": message, "parent": None, "children": []}
        conversation = {"id": "c1", "mapping": {"n1": node}, "current_node": "n1"}
        where = '[0].mapping["n1"].message'
    path = _export(tmp_path, [conversation])
    entries, history = _read(source, path)
    assert [(e.memory.text, e.memory.created_at) for e in entries] == [("hello there", None)]
    assert history.notes == [f"{path}: {where}: no readable time; stored with the time of the import"]
