"""Hybrid search with the real model: identifiers win among hundreds of look-alike memories."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import remem
from helpers import run_cli
from remem import NewMemory

TEMPLATES = [
    "Rolled back deploy {hash} of the payments service after checkout latency doubled.",
    "The nightly importer failed with error {code} while reading the supplier feed.",
    "Pinned {lib} {version} in the training image after the upgrade broke the pickled models.",
    "Prometheus now scrapes the metrics exporter at {ip} every fifteen seconds.",
    "The inference container crashed because {sofile} was missing from the base image.",
    "Moved the rate limit settings into {path} and reloaded the proxy.",
]
TARGETS = {  # the one memory of each kind that holds the identifier a query asks for
    "hash": "9f3c2ab1d4e5f60718293a4b5c6d7e8f90a1b2c3",
    "code": "E1045",
    "version": "1.26.4",
    "ip": "10.0.0.12",
    "sofile": "libcublas.so.12",
    "path": "/etc/nginx/conf.d/ratelimit.conf",
}
PROSE = [
    "Switched the pricing page from a table layout to a card grid; cards convert better on mobile.",
    "The login sequence uses short-lived JWTs with a refresh cookie.",
    "Bob is allergic to peanuts; avoid them when ordering lunch for the team.",
]


def _fill(rng: random.Random, template: str) -> str:
    return template.format(
        hash="".join(rng.choice("0123456789abcdef") for _ in range(40)),
        code=f"E{rng.randint(1000, 9999)}",
        lib=rng.choice(["numpy", "scipy", "pandas"]),
        version=f"{rng.randint(1, 3)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
        ip=f"10.{rng.randint(0, 9)}.{rng.randint(0, 9)}.{rng.randint(13, 250)}",
        sofile=f"lib{rng.choice(['cudnn', 'nccl', 'cufft', 'curand'])}.so.{rng.randint(7, 11)}",
        path=f"/etc/nginx/conf.d/{rng.choice(['limits', 'proxy', 'cache'])}{rng.randint(1, 99)}.conf",
    )


def _target_text(kind: str) -> str:
    template = TEMPLATES[list(TARGETS).index(kind)]
    return template.format(
        hash=TARGETS["hash"],
        code=TARGETS["code"],
        lib="numpy",
        version=TARGETS["version"],
        ip=TARGETS["ip"],
        sofile=TARGETS["sofile"],
        path=TARGETS["path"],
    )


@pytest.fixture(scope="module")
def lookalike_store(tmp_path_factory: pytest.TempPathFactory, session_models: Path) -> Path:
    """240 look-alike memories (40 per template, other identifiers), 6 targets (user alice), 3 prose."""
    rng = random.Random(1045)
    memories = [NewMemory(text=_fill(rng, t), user="bob") for t in TEMPLATES for _ in range(40)]
    memories += [NewMemory(text=_target_text(kind), user="alice") for kind in TARGETS]
    memories += [NewMemory(text=text, user="carol") for text in PROSE]
    rng.shuffle(memories)
    directory = tmp_path_factory.mktemp("lookalike") / "store"
    with remem.open(directory, models_dir=session_models) as store:  # the run's own model cache
        store.add_many(memories)
    return directory


def _top(store: Path, *args: str) -> list[dict[str, object]]:
    result = run_cli(["search", "--json", *args], store)
    assert result.code in (0, 1), result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        (TARGETS["hash"], "hash"),
        (TARGETS["hash"][:7], "hash"),  # a short hash, as people paste it
        (TARGETS["code"], "code"),
        (TARGETS["version"], "version"),
        (TARGETS["ip"], "ip"),
        (TARGETS["sofile"], "sofile"),
        ("ratelimit.conf", "path"),
    ],
)
def test_an_identifier_query_puts_its_memory_first_in_hybrid_mode(
    lookalike_store: Path, query: str, kind: str
) -> None:
    hits = _top(lookalike_store, "-k", "3", query)  # hybrid is the default mode
    assert hits[0]["text"] == _target_text(kind)
    assert hits[0]["lanes"]["keyword"]["rank"] == 1  # type: ignore[index]


@pytest.mark.parametrize(
    ("query", "answer"),
    [
        ("auth flow", PROSE[1]),
        ("food allergies on the team", PROSE[2]),
        ("card based pricing design", PROSE[0]),
    ],
)
def test_paraphrases_still_work_in_hybrid_mode(lookalike_store: Path, query: str, answer: str) -> None:
    assert answer in [hit["text"] for hit in _top(lookalike_store, "-k", "3", query)]


@pytest.mark.parametrize("mode", ["keyword", "hybrid", "vector"])
def test_filters_apply_to_both_lanes(lookalike_store: Path, mode: str) -> None:
    hits = _top(lookalike_store, "--mode", mode, "-k", "10", "--user", "bob", TARGETS["code"])
    if mode == "keyword":
        assert hits == []  # none of bob's memories holds E1045
    else:
        assert len(hits) == 10 and {hit["user"] for hit in hits} == {"bob"}
    mine = _top(lookalike_store, "--mode", mode, "-k", "50", "--user", "alice", "error")
    assert {hit["user"] for hit in mine} == {"alice"}


def test_keyword_mode_needs_no_model_and_takes_min_score(lookalike_store: Path) -> None:
    result = run_cli(["search", "--mode", "keyword", "--min-score", "0.1", "E1045"], lookalike_store)
    assert result.code == 0 and result.stderr == ""
    hits = _top(lookalike_store, "--mode", "keyword", "-k", "1", "E1045")
    assert hits[0]["lanes"]["vector"] is None and hits[0]["lanes"]["keyword"]["rank"] == 1  # type: ignore[index]
    assert 0.0 < float(hits[0]["score"]) <= 1.0  # type: ignore[arg-type]
