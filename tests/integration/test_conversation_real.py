"""Chat turns with the real model, through the CLI: a turn stored in a conversation is found by
meaning from what the turns before it say (``remem.core.turns``), the same turns stored alone are not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_cli

CHAT = [
    ("Ann", "Morning! How was the weekend?"),
    ("Evan", "Great, we took the kids to the lake and they swam all day."),
    ("Ann", "I spent mine painting the fence."),
    ("Evan", "Sounds relaxing. Did you finish it?"),
    ("Ann", "Almost. By the way, what are you driving these days?"),
    ("Evan", "A Prius, since March."),
    ("Ann", "My sister started a new job at the bank."),
    ("Evan", "Congrats to her! Which bank?"),
    ("Ann", "The one downtown, near the old cinema."),
    ("Evan", "I used to watch films there every Friday."),
]
QUESTIONS = [
    ("What car does Evan drive?", "A Prius, since March."),
    ("Where did Evan take his kids?", CHAT[1][1]),
    ("What did Ann paint?", CHAT[2][1]),
]


def _store(tmp_path: Path, conversation: str | None) -> Path:
    """A store of CHAT added with ``add --jsonl``, a minute per turn, in ``conversation`` if given."""
    lines = []
    for n, (role, text) in enumerate(CHAT):
        record = {"text": text, "role": role, "created_at": f"2026-03-02T09:{n:02d}:00Z"}
        lines.append(json.dumps(record | ({"conversation": conversation} if conversation else {})))
    source = tmp_path / "chat.jsonl"
    source.write_text("\n".join(lines) + "\n")
    store = tmp_path / "store"
    result = run_cli(["add", "--jsonl", str(source)], store)
    assert result.code == 0, result.stderr
    return store


def _first(store: Path, question: str) -> str:
    result = run_cli(["search", "--json", "--mode", "vector", "-k", "1", question], store)
    assert result.code == 0, result.stderr
    return str(json.loads(result.stdout)["text"])


@pytest.mark.parametrize(("question", "answer"), QUESTIONS)
def test_a_turn_is_found_from_its_context_in_a_conversation(
    tmp_path: Path, question: str, answer: str
) -> None:
    assert _first(_store(tmp_path, "weekend"), question) == answer


def test_the_same_turns_outside_a_conversation_miss_the_answer_that_leans_on_its_question(
    tmp_path: Path,
) -> None:
    question, answer = QUESTIONS[0]
    first = _first(_store(tmp_path, None), question)
    assert first != answer and first == CHAT[4][1]  # Ann's question, not Evan's answer
