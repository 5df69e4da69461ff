"""Writing systems and the vector lane: an English-only model's cosine between an English query and
a Chinese memory (or the other way round) is noise — often high for everything — so it must not
rank such a memory high.

The rule: when the store's model declares its languages and none of them is Chinese, Japanese or
Korean (``remem model list`` shows them), the vector lane ranks every memory written in the query's
script (CJK or not: ``analyzer.is_cjk``) before every memory in the other one (a search's pool:
``core/search/pool.py``, the back-end naming the memories in the other script).
The keyword lane is untouched, so a word both share (``TOEIC``) still finds the memory. A model
that declares no languages (your own, a test fake) is trusted as it is. A CJK query on such a model
gets a note saying so (``core/search/why.py``): its results come from its characters, not its meaning.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from remem.backends.analyzer import is_cjk
from remem.types import Tip

if TYPE_CHECKING:
    from remem.embedders.base import Embedder
    from remem.ingest import Entry

#: Language codes a model must declare to be trusted across scripts ("multilingual": any).
CJK_LANGUAGES = frozenset({"zh", "ja", "ko", "multilingual"})
#: How a note names a language a model declares (others by their code).
LANGUAGE_NAMES = {"en": "English"}
#: The model that reads Chinese, Japanese and Korean, as notes name it (``embedders.registry``).
MULTILINGUAL_MODEL = "multilingual-e5-small"
#: How to get it and move a store to it, as notes say it.
MULTILINGUAL_HOW = (
    f"`pip install 'remem[multilingual]'`, `remem model pull {MULTILINGUAL_MODEL}` (no download), "
    f"then `remem reindex --model {MULTILINGUAL_MODEL}`"
)
#: A new store's first memories that decide whether it is "mostly CJK" (its note says so).
FIRST_MEMORIES = 20


def blind_across_scripts(languages: Sequence[str]) -> bool:
    """True when a model declaring ``languages`` cannot compare CJK and other texts."""
    return bool(languages) and not CJK_LANGUAGES.intersection(languages)


def first_memories_tips(texts: Sequence[str], embedder: Embedder | None) -> tuple[Tip, ...]:
    """For a new store's first memories: the tip of the multilingual model when at least half of
    ``texts`` are CJK and the store's model (its ``embedder``, declaring ``languages``) cannot read
    them; else none (none without an embedder)."""
    if embedder is None or not texts or 2 * sum(map(is_cjk, texts)) < len(texts):
        return ()
    if not blind_across_scripts(getattr(embedder, "languages", ())):
        return ()
    return (
        Tip(
            f"These memories are in Chinese, Japanese or Korean, which this store's model reads by their "
            f"characters only. To find them by meaning: {MULTILINGUAL_HOW}.",
            key="multilingual",
        ),
    )


class FirstTexts:
    """The texts of the first ``FIRST_MEMORIES`` entries that pass through ``watch``."""

    def __init__(self) -> None:
        """Nothing seen yet."""
        self.texts: list[str] = []

    def watch(self, entries: Iterable[Entry]) -> Iterator[Entry]:
        """Yield ``entries`` unchanged, keeping the first texts."""
        for entry in entries:
            if len(self.texts) < FIRST_MEMORIES:
                self.texts.append(entry.memory.text)
            yield entry
