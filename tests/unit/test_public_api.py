"""The public Python API: what ``import remem`` offers, and a store driven end to end through it.

Every store here is opened with ``embedder=FakeEmbedder()``: the same code paths as the real model,
without ONNX. No library call may print: every test checks that nothing reached stdout or stderr.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import remem
from remem import AddResult, Filters, Memories, Memory, NewMemory, SearchMode
from remem.core.search.fuse import fuse
from remem.errors import (
    InvalidInputError,
    MemoryNotFoundError,
    RememError,
    StoreNotFoundError,
)
from remem.testing import FAKE_MODEL, FakeEmbedder

pytestmark = pytest.mark.filterwarnings("error")  # a library call warns by raising, or not at all

PUBLIC_NAMES = remem.__all__
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
INCIDENT = "Rolled back deploy 9f3c2ab1d4e5 after the importer failed with E1045."
POSTGRES = "Postgres 16 runs on the main box"
LOGIN = "The login sequence uses short-lived JWTs with a refresh cookie."
BACKUPS = "Postgres backups run nightly on the main box"


@pytest.fixture(autouse=True)
def _library_calls_are_silent(capsys: pytest.CaptureFixture[str]) -> Iterator[None]:
    yield
    assert capsys.readouterr() == ("", ""), "a library call wrote to stdout/stderr"


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def memories(tmp_path: Path, embedder: FakeEmbedder) -> Iterator[Memories]:
    with remem.open(tmp_path / "s", embedder=embedder) as opened:
        yield opened


@pytest.fixture
def filled(memories: Memories) -> dict[str, int]:
    """Four memories: text → id. BACKUPS was made two days ago."""
    two_days_ago = datetime.now(timezone.utc) - timedelta(days=2)
    return {
        INCIDENT: memories.add(INCIDENT, user="alice", tags=["incident"]).id,
        POSTGRES: memories.add(POSTGRES, user="bob", tags=["ops"]).id,
        LOGIN: memories.add(LOGIN, user="alice", tags=["auth"]).id,
        BACKUPS: memories.add(BACKUPS, user="alice", tags=["ops", "db"], created_at=two_days_ago).id,
    }


def snapshot(memories: Memories) -> list[dict[str, Any]]:
    return list(memories.export(with_vectors=True))


# --- the namespace -------------------------------------------------------------------------------


def _type_checking_imports() -> dict[str, str]:
    """What ``remem/__init__.py``'s ``if TYPE_CHECKING:`` block imports: name -> module."""
    tree = ast.parse(Path(remem.__file__).read_text(encoding="utf-8"))
    block = next(
        node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    imported: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module, ast.unparse(node)
        for alias in node.names:
            assert alias.asname == alias.name, f"{alias.name}: import it `as {alias.name}` (a re-export)"
            imported[alias.name] = node.module
    return imported


def test_type_checkers_see_exactly_the_public_names() -> None:
    # The one list is remem._HOMES; the TYPE_CHECKING block repeats it for mypy and IDEs.
    assert _type_checking_imports() == remem._HOME_OF
    assert remem.__all__ == sorted([*remem._HOME_OF, "__version__"]) and "Memories" in remem.__all__
    assert dir(remem) == remem.__all__


def _own_doc(obj: object) -> str:
    """The object's own docstring (not a dataclass's generated signature, not an inherited one)."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    if inspect.isclass(obj) and doc and doc.startswith(f"{obj.__name__}("):
        return ""  # what @dataclass writes when the class has no docstring
    return (doc or "").strip()


@pytest.mark.parametrize("name", PUBLIC_NAMES)
def test_every_public_name_is_importable_and_documented(name: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"from remem import {name}", namespace)
    obj = namespace[name]
    assert obj is getattr(remem, name)
    if name == "__version__":
        assert isinstance(obj, str) and re.fullmatch(r"\d+\.\d+\.\d+\S*", obj)
        return
    assert _own_doc(obj), f"remem.{name} has no docstring"


def _public_members(cls: type) -> Iterator[tuple[str, object]]:
    for attr, value in vars(cls).items():
        if attr.startswith("_"):
            continue
        if isinstance(value, property):
            yield attr, value.fget
        elif isinstance(value, classmethod | staticmethod):
            yield attr, value.__func__
        elif inspect.isfunction(value):
            yield attr, value


@pytest.mark.parametrize("name", [n for n in PUBLIC_NAMES if inspect.isclass(getattr(remem, n))])
def test_public_methods_are_documented(name: str) -> None:
    cls = getattr(remem, name)
    undocumented = [attr for attr, member in _public_members(cls) if not _own_doc(member)]
    assert undocumented == [], f"remem.{name}: {undocumented}"


def test_errors_form_one_documented_tree() -> None:
    import remem.errors

    errors = [
        obj for obj in vars(remem.errors).values() if inspect.isclass(obj) and issubclass(obj, Exception)
    ]
    assert len(errors) > 5
    for error in errors:
        assert issubclass(error, RememError), error
        assert _own_doc(error), error


def test_the_fake_embedder_is_an_embedder() -> None:
    fake = FakeEmbedder()
    assert isinstance(fake, remem.Embedder)
    assert fake.info == FAKE_MODEL
    assert fake.embed_queries(["x"]).vectors.shape == (1, FAKE_MODEL.dim)
    assert fake.calls == 1


def _loaded_after(code: str, cwd: Path) -> list[str]:
    """Which of the heavy modules a fresh interpreter has loaded after running ``code``."""
    probe = (
        f"{code}\nimport json, sys\n"
        "print(json.dumps([m for m in ('numpy', 'faiss', 'onnxruntime', 'tokenizers') if m in sys.modules]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout.splitlines()[-1])
    return loaded


@pytest.mark.slow
def test_import_remem_loads_no_numpy_faiss_or_onnxruntime(tmp_path: Path) -> None:
    assert _loaded_after("import remem", tmp_path) == []


@pytest.mark.slow
def test_listing_and_keyword_search_load_no_numpy_faiss_or_onnxruntime(tmp_path: Path) -> None:
    code = (
        "import remem\n"
        f"with remem.open({str(tmp_path / 's')!r}) as m:\n"
        "    m.list(); m.search('x', mode='keyword'); list(m.export()); m.stats()"
    )
    assert _loaded_after(code, tmp_path) == []


# --- opening -------------------------------------------------------------------------------------


def test_open_without_create_refuses_a_missing_store(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        remem.open(tmp_path / "missing", create=False, embedder=FakeEmbedder())
    assert not (tmp_path / "missing").exists()


def test_open_defaults_to_remem_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMEM_HOME", str(tmp_path / "home"))
    with remem.open(embedder=FakeEmbedder()) as opened:
        opened.add("stored at home")
        assert Path(opened.location) == tmp_path / "home"
    with remem.open(tmp_path / "home", create=False, embedder=FakeEmbedder()) as again:
        assert [m.text for m in again.list()] == ["stored at home"]
    with remem.open(environ={"REMEM_HOME": str(tmp_path / "elsewhere")}, embedder=FakeEmbedder()) as other:
        assert Path(other.location) == tmp_path / "elsewhere"
        assert other.list() == []


# --- adding --------------------------------------------------------------------------------------


def test_add_and_a_duplicate_add(memories: Memories, embedder: FakeEmbedder) -> None:
    assert memories.model is None
    result = memories.add(POSTGRES, user="alice", tags=["ops", "db", "ops"], meta={"host": "main"})
    assert result == AddResult(id=result.id, duplicate=False)
    assert memories.model == FAKE_MODEL
    calls = embedder.calls
    assert calls == 1

    again = memories.add(f"  {POSTGRES}\n", user="alice", tags=["other"])
    assert again == AddResult(id=result.id, duplicate=True)
    assert embedder.calls == calls  # a duplicate is never embedded
    stored = memories.get(result.id)
    assert (stored.text, stored.user, stored.tags, stored.meta) == (
        POSTGRES,
        "alice",
        ("db", "ops"),
        {"host": "main"},
    )
    assert TIMESTAMP.fullmatch(stored.created_at)
    assert memories.add(POSTGRES, user="bob").duplicate is False  # another user: not a duplicate
    assert (memories.notes, memories.warnings) == ([], [])


def test_a_duplicate_add_loads_no_model(tmp_path: Path) -> None:
    with remem.open(tmp_path / "s", embedder=FakeEmbedder()) as first:
        first.add(POSTGRES)
    fresh = FakeEmbedder()
    with remem.open(tmp_path / "s", embedder=fresh) as second:
        assert second.add(POSTGRES).duplicate is True
    assert fresh.calls == 0


def test_add_with_a_timestamp(memories: Memories) -> None:
    naive = memories.add("naive is UTC", created_at=datetime(2024, 1, 2, 3, 4, 5, 678000)).id
    aware = memories.add(
        "aware", created_at=datetime(2024, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    ).id
    text = memories.add("from text", created_at="2024-01-02T03:04:05Z").id
    assert memories.get(naive).created_at == "2024-01-02T03:04:05.678Z"
    assert memories.get(aware).created_at == "2024-01-02T03:04:05.000Z"
    assert memories.get(text).created_at == "2024-01-02T03:04:05.000Z"


def test_add_many(memories: Memories, embedder: FakeEmbedder) -> None:
    first = memories.add("already here").id
    progress: list[tuple[int, int]] = []
    result = memories.add_many(
        [
            "one",
            NewMemory("two", user="bob", tags=("x", "y", "x")),
            "one",
            "already here",
            NewMemory("three"),
        ],
        progress=lambda done, total: progress.append((done, total)),
    )
    assert len(result.added) == 3 and result.added == sorted(result.added) and result.added[0] > first
    one, two, three = result.added
    assert result.duplicates == [one, first]
    assert (result.skipped, result.reused_vectors) == ([], 0)
    assert progress[-1] == (3, 3)
    assert memories.get(two).tags == ("x", "y")
    assert [m.text for m in memories.iter()] == ["already here", "one", "two", "three"]

    calls = embedder.calls
    again = memories.add_many(["one", NewMemory("two", user="bob")])
    assert (again.added, again.duplicates) == ([], [one, two])
    assert embedder.calls == calls
    assert memories.get(three).text == "three"


def test_add_many_is_all_or_nothing(memories: Memories, embedder: FakeEmbedder) -> None:
    with pytest.raises(InvalidInputError):
        memories.add_many(["fine", "  "])
    with pytest.raises(InvalidInputError):
        memories.add_many([NewMemory("fine"), NewMemory("bad created_at", created_at="soon")])
    with pytest.raises(TypeError):
        memories.add_many([NewMemory("fine"), {"text": "not a NewMemory"}])  # type: ignore[list-item]
    assert memories.list() == []
    assert embedder.calls == 0


# --- searching -----------------------------------------------------------------------------------


def test_search_in_every_mode(memories: Memories, filled: dict[str, int]) -> None:
    for mode in ("hybrid", "vector", "keyword", SearchMode.HYBRID, SearchMode.VECTOR, SearchMode.KEYWORD):
        result = memories.search("postgres main box", mode=mode, k=2)
        assert len(result) == 2 and len(list(result)) == 2
        assert {hit.memory.text for hit in result} == {POSTGRES, BACKUPS}, mode
        assert result[0].score >= result[1].score
        assert result.notes == ()
    assert len(memories.search("postgres main box", k=10, mode="vector")) == 4


def test_hits_carry_their_lanes(memories: Memories, filled: dict[str, int]) -> None:
    (keyword,) = memories.search("E1045", mode="keyword", k=1)
    assert keyword.memory.id == filled[INCIDENT]
    assert keyword.vector is None and keyword.keyword is not None
    assert keyword.calibration is not None and keyword.keyword.rank == 1
    assert keyword.calibration.ranking == keyword.keyword.score and 0.0 <= keyword.score <= 1.0

    for hit in memories.search("postgres main box", mode="vector", k=4):
        assert hit.keyword is None and hit.vector is not None and hit.calibration is not None
        assert hit.calibration.ranking == hit.vector.score and 0.0 <= hit.score <= 1.0

    hybrid = memories.search("E1045", k=len(filled))  # the whole store: the fusion's pool
    assert hybrid[0].memory.id == filled[INCIDENT]
    assert len(hybrid) == len(filled)
    vector = sorted(((h.memory.id, h.vector) for h in hybrid if h.vector), key=lambda p: p[1].rank)
    keyword = sorted(((h.memory.id, h.keyword) for h in hybrid if h.keyword), key=lambda p: p[1].rank)
    assert len(vector) == len(filled)  # the vector lane scores every pooled memory
    # One term, which every match holds whole (no damping), and matches enough that BM25's spread is
    # above its floor: the lanes' scores alone give the fused scores.
    refused = fuse([(mid, lane.score) for mid, lane in vector], [(mid, lane.score) for mid, lane in keyword])
    ranking = [(h.memory.id, pytest.approx(h.calibration.ranking if h.calibration else None)) for h in hybrid]
    assert [(r.id, r.score) for r in refused] == ranking


def test_search_finds_an_identifier(memories: Memories, filled: dict[str, int]) -> None:
    for mode in ("hybrid", "keyword"):
        assert memories.search("9f3c2ab", mode=mode)[0].memory.id == filled[INCIDENT]


def test_search_with_filters(memories: Memories, filled: dict[str, int]) -> None:
    def found(**options: Any) -> set[str]:
        return {hit.memory.text for hit in memories.search("postgres main box", k=10, **options)}

    assert found(tags="ops") == {POSTGRES, BACKUPS}
    assert found(tags=["ops", "db"]) == {BACKUPS}
    assert found(user="alice") == {INCIDENT, LOGIN, BACKUPS}
    assert found(user="alice", tags=["ops"]) == {BACKUPS}
    assert found(since="1h") == {INCIDENT, POSTGRES, LOGIN}
    assert found(until="1d") == {BACKUPS}
    assert found(user="alice", since="1h", mode="keyword") == set()
    assert found(tags="ops", mode="keyword") == {POSTGRES, BACKUPS}
    assert found(where=Filters.of(user="bob")) == {POSTGRES}
    assert found(user="nobody") == set()


def test_search_min_score(memories: Memories, filled: dict[str, int]) -> None:
    everything = memories.search("postgres main box", mode="vector", k=10)
    threshold = (everything[0].score + everything[1].score) / 2
    result = memories.search("postgres main box", mode="vector", k=10, min_score=threshold)
    assert [hit.memory.id for hit in result] == [everything[0].memory.id]
    assert result.below_min_score == 3
    assert result.best_below == pytest.approx(everything[1].score)


def test_search_of_an_empty_store(memories: Memories, embedder: FakeEmbedder) -> None:
    assert list(memories.search("anything")) == []
    assert list(memories.search("anything", mode="keyword")) == []
    assert embedder.calls == 0


# --- reading, changing ---------------------------------------------------------------------------


def test_list_newest_first(memories: Memories, filled: dict[str, int]) -> None:
    later = memories.add("added last").id
    listed = memories.list()
    assert [m.id for m in listed] == [
        later,
        filled[LOGIN],
        filled[POSTGRES],
        filled[INCIDENT],
        filled[BACKUPS],
    ]
    assert [m.id for m in memories.list(limit=2)] == [later, filled[LOGIN]]
    assert [m.id for m in memories.list(user="alice")] == [filled[LOGIN], filled[INCIDENT], filled[BACKUPS]]
    assert [m.id for m in memories.list(tags=["ops"], since="1h")] == [filled[POSTGRES]]
    assert [m.id for m in memories.iter(user="alice")] == sorted(
        [filled[LOGIN], filled[INCIDENT], filled[BACKUPS]]
    )


def test_get(memories: Memories, filled: dict[str, int]) -> None:
    memory = memories.get(filled[LOGIN])
    assert isinstance(memory, Memory)
    assert (memory.text, memory.user, memory.tags) == (LOGIN, "alice", ("auth",))
    with pytest.raises(MemoryNotFoundError) as raised:
        memories.get(9999)
    assert raised.value.ids == [9999]
    assert set(memories.get_many([filled[LOGIN], 9999])) == {filled[LOGIN]}


def test_edit(memories: Memories, filled: dict[str, int], embedder: FakeEmbedder) -> None:
    before = memories.get(filled[POSTGRES])
    edited = memories.edit(filled[POSTGRES], "  Postgres 17 runs on the main box since November ")
    assert (edited.id, edited.created_at, edited.user, edited.tags) == (
        before.id,
        before.created_at,
        before.user,
        before.tags,
    )
    assert edited.text == "Postgres 17 runs on the main box since November"
    assert edited.updated_at is not None and TIMESTAMP.fullmatch(edited.updated_at)
    assert memories.get(edited.id) == edited
    assert memories.search("november", mode="keyword")[0].memory.id == edited.id

    calls = embedder.calls
    with pytest.raises(MemoryNotFoundError):
        memories.edit(9999, "nothing to edit")
    assert embedder.calls == calls  # nothing was embedded
    with pytest.raises(InvalidInputError):  # alice already holds that text
        memories.edit(filled[LOGIN], INCIDENT)
    assert memories.get(filled[LOGIN]).text == LOGIN


def test_forget_by_ids(memories: Memories, filled: dict[str, int]) -> None:
    result = memories.forget([filled[LOGIN], 9999, filled[LOGIN]])
    assert [m.id for m in result.forgotten] == [filled[LOGIN]]
    assert result.forgotten[0].text == LOGIN
    assert (result.missing, result.dry_run) == ((9999,), False)
    with pytest.raises(MemoryNotFoundError):
        memories.get(filled[LOGIN])
    assert LOGIN not in {hit.memory.text for hit in memories.search("login sequence", k=10)}


def test_forget_where_with_dry_run(memories: Memories, filled: dict[str, int]) -> None:
    ops = sorted([filled[POSTGRES], filled[BACKUPS]])
    before = snapshot(memories)
    dry = memories.forget(where=Filters.of(tags=["ops"]), dry_run=True)
    assert ([m.id for m in dry.forgotten], dry.missing, dry.dry_run) == (ops, (), True)
    assert snapshot(memories) == before

    done = memories.forget(where=Filters.of(tags=["ops"]))
    assert ([m.id for m in done.forgotten], done.dry_run) == (ops, False)
    assert sorted(m.id for m in memories.list()) == sorted([filled[INCIDENT], filled[LOGIN]])
    assert memories.forget(where=Filters.of(tags=["ops"])).forgotten == ()


def test_forget_needs_ids_or_filters(memories: Memories, filled: dict[str, int]) -> None:
    before = snapshot(memories)
    with pytest.raises(InvalidInputError):
        memories.forget()
    with pytest.raises(InvalidInputError):
        memories.forget(where=Filters())
    with pytest.raises(InvalidInputError):
        memories.forget([filled[LOGIN]], where=Filters.of(user="alice"))
    assert snapshot(memories) == before


def test_context(memories: Memories, filled: dict[str, int]) -> None:
    items = memories.context("postgres main box", recent=1, similar=2)
    assert [(item.source, item.memory.id) for item in items] == [
        ("recent", filled[LOGIN]),
        ("similar", filled[POSTGRES]),
        ("similar", filled[BACKUPS]),
    ]
    prepended = memories.context("postgres main box", recent=1, similar=2, merge_as="prepend")
    assert [item.source for item in prepended] == ["similar", "similar", "recent"]
    only_recent = memories.context(recent=2)
    assert [(i.source, i.memory.id) for i in only_recent] == [
        ("recent", filled[LOGIN]),
        ("recent", filled[POSTGRES]),
    ]
    mine = memories.context("postgres", recent=5, similar=5, user="bob")
    assert {item.memory.id for item in mine} == {filled[POSTGRES]}
    assert len(mine) == 1  # each memory once


# --- moving and maintaining ----------------------------------------------------------------------


@pytest.mark.parametrize("with_vectors", [False, True])
def test_export_then_import_gives_identical_records(
    tmp_path: Path, memories: Memories, filled: dict[str, int], with_vectors: bool
) -> None:
    memories.forget([filled[INCIDENT]])  # a gap in the ids
    memories.edit(filled[LOGIN], "The login sequence uses JWTs.")  # an updated_at
    memories.add(
        "with everything", user="carol", conversation="c", role="user", tags=["t"], meta={"ключ": "✓"}
    )
    records = list(memories.export(with_vectors=with_vectors))
    assert all(("vector" in record) is with_vectors for record in records)
    json.loads(json.dumps(records))  # JSON-ready

    target = FakeEmbedder()
    with remem.open(tmp_path / "copy", embedder=target) as copy:
        result = copy.import_(records)
        assert result.added == [record["id"] for record in records]
        assert (result.duplicates, result.skipped) == ([], [])
        assert result.reused_vectors == (len(records) if with_vectors else 0)
        assert (target.calls == 0) is with_vectors  # carried vectors of the same model are reused
        assert list(copy.export(with_vectors=with_vectors)) == records
        assert list(copy.export(with_vectors=True)) == list(memories.export(with_vectors=True))
        again = copy.import_(records)
        assert (again.added, again.duplicates) == ([], [record["id"] for record in records])


def test_export_with_filters(memories: Memories, filled: dict[str, int]) -> None:
    assert [r["id"] for r in memories.export(user="alice")] == sorted(
        [filled[INCIDENT], filled[LOGIN], filled[BACKUPS]]
    )
    assert [r["text"] for r in memories.export(where=Filters.of(tags=["ops", "db"]))] == [BACKUPS]


def test_import_of_a_bad_record_imports_nothing(memories: Memories) -> None:
    good = {"text": "a good record", "tags": ["x"]}
    with pytest.raises(InvalidInputError, match="record 2"):
        memories.import_([good, {"text": "  "}])
    assert memories.list() == []
    result = memories.import_([good, {"text": "wrong hash", "sha256": "0" * 64}], skip_invalid=True)
    assert result.skipped == [2]
    assert [m.text for m in memories.list()] == ["a good record"]


def test_stats_and_doctor(memories: Memories, filled: dict[str, int]) -> None:
    stats = memories.stats()
    assert isinstance(stats, remem.StoreStats)
    assert (stats.memories, stats.vectors, stats.model) == (4, 4, FAKE_MODEL)
    assert stats.by_user == {"alice": 3, "bob": 1}
    assert stats.by_tag == {"ops": 2, "auth": 1, "db": 1, "incident": 1}
    report = memories.doctor()
    assert report.ok, [check for check in report.checks if not check.ok]
    assert report.repaired == ()
    assert "model" in {check.name for check in report.checks}


# --- bad arguments -------------------------------------------------------------------------------

BAD_CALLS = [
    ("empty-text", lambda m: m.add("")),
    ("blank-text", lambda m: m.add(" \n\t ")),
    ("blank-user", lambda m: m.add("x", user="  ")),
    ("bad-created-at", lambda m: m.add("x", created_at="yesterday-ish")),
    ("k-zero", lambda m: m.search("postgres", k=0)),
    ("min-score-2", lambda m: m.search("postgres", min_score=2)),
    ("min-score-nan", lambda m: m.search("postgres", min_score=float("nan"))),
    ("min-score-negative", lambda m: m.search("postgres", mode="keyword", min_score=-0.5)),
    ("empty-query", lambda m: m.search("  ")),
    ("bad-since", lambda m: m.search("postgres", since="yesterday morning")),
    ("since-after-until", lambda m: m.search("postgres", since="1h", until="2h")),
    ("where-and-keywords", lambda m: m.list(where=Filters.of(user="a"), user="b")),
    ("empty-tag", lambda m: m.list(tags=[""])),
    ("add-many-one-blank", lambda m: m.add_many(["fine", ""])),
    ("edit-blank", lambda m: m.edit(1, "   ")),
    ("forget-nothing", lambda m: m.forget()),
]


@pytest.mark.parametrize("call", [c[1] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_an_invalid_argument_changes_nothing(
    memories: Memories, filled: dict[str, int], embedder: FakeEmbedder, call: Any
) -> None:
    before, calls = snapshot(memories), embedder.calls
    with pytest.raises(InvalidInputError):
        call(memories)
    assert snapshot(memories) == before
    assert embedder.calls == calls


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.search("postgres", colour="red"),
        lambda m: m.list(usr="alice"),
        lambda m: m.export(tag="ops"),
        lambda m: m.context("postgres", limit=3),
    ],
    ids=["search", "list", "export", "context"],
)
def test_an_unknown_filter_keyword_is_a_type_error(
    memories: Memories, filled: dict[str, int], embedder: FakeEmbedder, call: Any
) -> None:
    before, calls = snapshot(memories), embedder.calls
    with pytest.raises(TypeError):
        call(memories)
    assert snapshot(memories) == before
    assert embedder.calls == calls


def test_tags_given_as_one_string(memories: Memories) -> None:
    with pytest.raises(TypeError, match="tags"):  # a str is a Sequence[str], but not of tags
        memories.add("tagged with a string", tags="ops")
    assert memories.list() == []


@pytest.mark.parametrize(
    "call",
    [lambda m: m.search("postgres", mode="fuzzy"), lambda m: m.context("postgres", merge_as="shuffle")],
    ids=["search-mode", "merge-as"],
)
def test_an_unknown_mode_is_invalid_input(memories: Memories, filled: dict[str, int], call: Any) -> None:
    with pytest.raises(InvalidInputError):
        call(memories)
