"""Long memories: how a model's windows for stored texts rank them, on LoCoMo's sessions stored whole.

    python bench/long_memories.py [--data ../shared/bench/locomo] [--model all-minilm-l6-v2]

Each LoCoMo session (about 690 tokens: every turn as ``speaker: text``, one per line) is one
memory; each question of categories 1–4 with evidence asks for the session holding its evidence,
among the sessions of its own conversation (about 27). A memory scores as its best window (the
cosine of its best window's vector with the query's), as remem's vector lane scores it. The table
gives hit@1, hit@3 and the mean reciprocal rank of the first evidence session for window settings
of the same model file, side by side in one run: what remem ships for the model
(``ModelSpec.document_window``, ``windows.OVERLAP_FRACTION``) and the settings it is compared with:
the model's whole window (``max_tokens``) and the two overlaps, 0.25 (remem's before) and 0.5.

Only the model, the tokenizer and remem's windowing run here (``OnnxEmbedder.embed_documents`` with
the spec and overlap of each row); no store. The data is not part of the repository: pass --data.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # the bench folder's own module


@dataclasses.dataclass(frozen=True)
class Question:
    """A question, its conversation and the numbers of the sessions holding its evidence."""

    conversation: str
    text: str
    sessions: frozenset[int]


def sessions_of(data: dict[str, dict[str, Any]]) -> list[tuple[str, int, str]]:
    """(conversation, session number, the session's text) for every session of the data."""
    found = []
    for name, conversation in data.items():
        number = 1
        while f"session_{number}" in conversation:
            lines = [f"{turn['speaker']}: {turn['text']}" for turn in conversation[f"session_{number}"]]
            found.append((name, number, "\n".join(lines)))
            number += 1
    return found


def questions_of(data: dict[str, dict[str, Any]]) -> list[Question]:
    """The questions of categories 1–4 whose evidence names a session."""
    found = []
    for name, conversation in data.items():
        for qa in conversation["qa"]:
            if qa.get("category") not in locomo.CATEGORIES:
                continue
            held = {int(m.group(1)) for e in qa.get("evidence") or [] if (m := re.match(r"D(\d+):", e))}
            if held:
                found.append(Question(name, str(qa["question"]), frozenset(held)))
    return found


def first_evidence_ranks(
    windows: Sequence[np.ndarray],
    sessions: list[tuple[str, int, str]],
    questions: list[Question],
    q: np.ndarray,
) -> list[int]:
    """Each question's 0-based rank of its first evidence session among its conversation's."""
    ranks = []
    for row, question in enumerate(questions):
        scored = sorted(
            ((float((windows[i] @ q[row]).max()), number) for i, (name, number, _) in enumerate(sessions)
             if name == question.conversation),
            reverse=True,
        )  # fmt: skip
        order = [number for _, number in scored]
        ranks.append(min(order.index(n) for n in question.sessions if n in order))
    return ranks


def main() -> None:
    """Embed the sessions under each window setting and print the table."""
    import remem
    from remem.embedders import windows as windowing
    from remem.embedders.registry import BUNDLED_MODEL
    from remem.embedders.runner import OnnxEmbedder

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/bench/locomo"))
    parser.add_argument("--model", default=BUNDLED_MODEL.name)
    args = parser.parse_args()
    data = locomo.load(args.data)
    sessions, questions = sessions_of(data), questions_of(data)
    model = remem.model_catalog().load(args.model, verify=True)
    shipped_spec, shipped_overlap = model.spec, windowing.OVERLAP_FRACTION
    q = np.asarray(model.embed_queries([question.text for question in questions]).vectors)
    settings = dict.fromkeys(
        [
            (shipped_spec.document_window, shipped_overlap),
            (shipped_spec.max_tokens, 0.25),
            (shipped_spec.document_window, 0.25),
            (shipped_spec.max_tokens, 0.5),
        ]
    )
    print(f"model: {args.model}; {len(sessions)} sessions, {len(questions)} questions\n")
    print("| stored windows (tokens, overlap) | windows per session | hit@1 | hit@3 | MRR |")
    print("|---|---:|---:|---:|---:|")
    try:
        for size, overlap in settings:
            setting = OnnxEmbedder.of(
                dataclasses.replace(shipped_spec, document_tokens=size), model.files, sha256=model.sha256
            )
            windowing.OVERLAP_FRACTION = overlap  # a module constant: set for this row, restored below
            embedded = setting.embed_documents([text for _, _, text in sessions]).windows
            ranks = np.asarray(first_evidence_ranks(embedded, sessions, questions, q))
            shipped = (
                " (shipped)" if (size, overlap) == (shipped_spec.document_window, shipped_overlap) else ""
            )
            per = np.mean([len(w) for w in embedded])
            print(
                f"| {size}, {overlap}{shipped} | {per:.1f} | {np.mean(ranks < 1):.4f} "
                f"| {np.mean(ranks < 3):.4f} | {np.mean(1 / (ranks + 1)):.4f} |",
                flush=True,
            )
    finally:
        windowing.OVERLAP_FRACTION = shipped_overlap


if __name__ == "__main__":
    main()
