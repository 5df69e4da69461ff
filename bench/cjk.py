"""hit@1 / hit@3 of each search mode and model on the CJK cross-lingual set (tests/data/cjk_set.json).

    python bench/cjk.py [--model all-minilm-l6-v2 --model multilingual-e5-small]
                        [--models-dir DIR] [--set tests/data/cjk_set.json] [--json]

Goes through the public Python API on a temporary store per model (``remem.open``, ``Memories.add``,
``Memories.search(..., k=3, mode=...)``). Each model is loaded by name from the catalog, as
``remem reindex --model NAME`` loads it (``remem.model_catalog(models_dir=...).load(name,
verify=True)``), and given to ``remem.open`` as the store's embedder; the default is the bundled
model, so naming it next to another model measures the baseline in the same run. A model that is not
installed (or not known) is one line on stderr and exit status 2. Prints one table, a row per mode
and query kind, a column group per model; ``--json`` prints the same numbers, and each query's rank,
as JSON.

The set's queries paraphrase their answers: ``overlap`` is the rule (at most one shared Han
character; no shared katakana word, Korean two-syllable run or English content word), which
tests/unit/test_cjk_set.py holds the set to; a query breaking it is reported here before the run.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import _harness
import remem
from remem.errors import EmbedderError

MODES = ("vector", "keyword", "hybrid")
KINDS = ("zh-zh", "ja-ja", "ko-ko", "zh-en", "en-zh", "ja-en", "en-ja", "ko-en", "en-ko", "mixed", "all")
DEFAULT_SET = Path(__file__).resolve().parent.parent / "tests" / "data" / "cjk_set.json"
DEFAULT_MODEL = "all-minilm-l6-v2"  # the bundled model (remem.embedders.registry.BUNDLED_MODEL)

#: Han ideographs: the unified blocks, extension A, compatibility ideographs, extensions B and on.
HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
#: A katakana word (two or more katakana or prolonged-sound marks); hiragana is grammar, not compared.
KATAKANA_WORD = re.compile("[\u30a1-\u30fa\u30fc]{2,}")
#: A run of Hangul syllables; two adjacent syllables of one are compared (a word stem, mostly).
HANGUL_RUN = re.compile("[\uac00-\ud7a3]+")
ASCII_WORD = re.compile("[a-z0-9]+")
#: English words that say nothing about a note's topic (after lower-casing and splitting at "'").
_STOPWORD_LIST = """a about after all am an and any are as at be been before but by can could did do does
    for from had has have he her his how i if in into is it its just me my no not of on or our out she should
    so t that the their them then there they this to up us was we were what when where which who why
    will with would you your s d ll m re ve"""
STOPWORDS = frozenset(_STOPWORD_LIST.split())


def _stem(word: str) -> str:
    """A crude English stem, enough to see ``flight`` in ``flights``: a final ``s`` dropped."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def han(text: str) -> set[str]:
    """The Han characters of ``text``."""
    return set(HAN.findall(text))


def katakana_words(text: str) -> set[str]:
    """The katakana words of ``text``."""
    return set(KATAKANA_WORD.findall(text))


def hangul_pairs(text: str) -> set[str]:
    """Every two adjacent Hangul syllables inside one word of ``text``."""
    return {run[i : i + 2] for run in HANGUL_RUN.findall(text) for i in range(len(run) - 1)}


def content_words(text: str) -> set[str]:
    """The English (ASCII) content words of ``text``: lower-cased, stemmed, stopwords left out."""
    return {_stem(word) for word in ASCII_WORD.findall(text.lower()) if word not in STOPWORDS}


def overlap(query: str, memory: str, allowed: str = "") -> dict[str, list[str]]:
    """What ``query`` shares with ``memory``, by kind (han, katakana, hangul, words), sorted; Han
    characters in ``allowed`` are not counted."""
    return {
        "han": sorted((han(query) & han(memory)) - set(allowed)),
        "katakana": sorted(katakana_words(query) & katakana_words(memory)),
        "hangul": sorted(hangul_pairs(query) & hangul_pairs(memory)),
        "words": sorted(content_words(query) & content_words(memory)),
    }


def problems(data: dict[str, Any]) -> list[str]:
    """Every query that shares too much with its answer: more than one Han character (besides its
    ``allow_shared``) or any katakana word, Hangul pair or English content word."""
    texts = {memory["key"]: memory["text"] for memory in data["memories"]}
    found = []
    for query in data["queries"]:
        shared = overlap(query["text"], texts.get(query["answer"], ""), query.get("allow_shared", ""))
        too_much = {
            kind: items for kind, items in shared.items() if items and (kind != "han" or len(items) > 1)
        }
        if too_much:
            found.append(f"{query['text']!r} shares {too_much} with its answer {query['answer']!r}")
    return found


def load_embedder(name: str, models_dir: Path | None) -> remem.Embedder:
    """The embedder of model ``name``, its files verified, as ``remem reindex --model`` loads it;
    EmbedderError when it is unknown or not installed."""
    return remem.model_catalog(models_dir=models_dir).load(name, verify=True)


def evaluate(
    data: dict[str, Any], store: Path, embedder: remem.Embedder | None = None, models_dir: Path | None = None
) -> dict[tuple[str, str], list[int]]:
    """For every (mode, kind), the 1-based rank of each query's answer (0 if not in the top 3), in
    the order of the queries (kind "all": every query)."""
    ranks: dict[tuple[str, str], list[int]] = defaultdict(list)
    with remem.open(store, models_dir=models_dir, embedder=embedder) as memories:
        ids = {memory["key"]: memories.add(memory["text"]).id for memory in data["memories"]}
        for mode in MODES:
            for query in data["queries"]:
                found = [hit.memory.id for hit in memories.search(query["text"], k=3, mode=mode)]
                answer = ids[query["answer"]]
                rank = found.index(answer) + 1 if answer in found else 0
                ranks[(mode, query["kind"])].append(rank)
                ranks[(mode, "all")].append(rank)
    return ranks


def summary(ranks: dict[tuple[str, str], list[int]]) -> dict[str, dict[str, dict[str, float]]]:
    """n, hit@1 and hit@3 by mode, then kind (kinds without queries left out)."""
    table: dict[str, dict[str, dict[str, float]]] = {}
    for mode in MODES:
        table[mode] = {}
        for kind in KINDS:
            found = ranks.get((mode, kind), [])
            if found:
                table[mode][kind] = {
                    "n": len(found),
                    "hit@1": sum(rank == 1 for rank in found) / len(found),
                    "hit@3": sum(rank >= 1 for rank in found) / len(found),
                }
    return table


def per_query(data: dict[str, Any], ranks: dict[tuple[str, str], list[int]]) -> list[dict[str, Any]]:
    """Each query with its answer's rank in every mode (0: not in the top 3)."""
    return [
        {**query, "rank": {mode: ranks[(mode, "all")][i] for mode in MODES}}
        for i, query in enumerate(data["queries"])
    ]


def table(results: dict[str, dict[str, dict[str, dict[str, float]]]]) -> list[str]:
    """The Markdown table: a row per mode and kind, hit@1 and hit@3 of each model."""
    models = list(results)
    head = "| mode | kind | n | " + " | ".join(f"{model} hit@1 | hit@3" for model in models) + " |"
    lines = [head, "|---|---|---:|" + "---:|---:|" * len(models)]
    first = results[models[0]]
    for mode in MODES:
        for kind, row in first[mode].items():
            cells = " | ".join(
                f"{results[m][mode][kind]['hit@1']:.2f} | {results[m][mode][kind]['hit@3']:.2f}"
                for m in models
            )
            lines.append(f"| {mode} | {kind} | {row['n']:.0f} | {cells} |")
    return lines


def main() -> None:
    """Load the set and the models, evaluate every model and mode, print the table (or JSON)."""
    parser = _harness.parser(__doc__ + "\n(the set is small: --quick runs it whole)")
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument(
        "--model", action="append", help=f"a model to measure (repeatable; default {DEFAULT_MODEL})"
    )
    parser.add_argument("--models-dir", type=Path, help="where pulled models are (default: remem's own)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    names = list(dict.fromkeys(args.model or [DEFAULT_MODEL]))
    data = json.loads(args.set.read_text(encoding="utf-8"))
    for problem in problems(data):
        print(f"warning: {problem}", file=sys.stderr)
    embedders = {}
    for name in names:
        try:
            embedders[name] = load_embedder(name, args.models_dir)
        except EmbedderError as error:
            print(f"cjk.py: cannot load model {name}: {error}", file=sys.stderr)
            sys.exit(2)
    results, queries = {}, {}
    for name, embedder in embedders.items():
        with tempfile.TemporaryDirectory() as tmp:
            ranks = evaluate(data, Path(tmp) / "store", embedder, args.models_dir)
        results[name], queries[name] = summary(ranks), per_query(data, ranks)
    if args.json:
        shape = {"set": str(args.set), "memories": len(data["memories"]), "queries": len(data["queries"])}
        print(json.dumps({**shape, "results": results, "per_query": queries}, ensure_ascii=False, indent=2))
        return
    print(_harness.machine())
    print(f"{len(data['memories'])} memories, {len(data['queries'])} queries\n")
    print("\n".join(table(results)))


if __name__ == "__main__":
    main()
