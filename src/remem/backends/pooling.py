"""A search's candidate pool in one back-end call (``Backend.pool``): how both back-ends gather what
the core asks (``base.PoolRequest``) from their lane primitives into what it gets
(``base.PoolAnswer``) (``gather``), so the order of the steps lives once.

The steps of a hybrid pool, each over the search's filters: the memories holding the required
phrases (then the lanes rank only those); the keyword lane's top (and its top within the window
the query's time words name, merged in by score); the turns among them, when the query may name
speakers (the core makes the query's vector from them: without the speakers they name); the
vector lane's top (likewise with the window); the cosines of the keyword matches beyond that top;
the BM25 of the vector top's memories beyond the keyword top; every pooled memory's turn, keyword
coverage and (when asked) text. Keyword and vector pools take only their own lane's top. A back-end
may answer the same with fewer round trips (``Shortcuts``): a lane's top and its top within the
window in one go, the keyword top's turns with it; the last step (``Facts``: the per-memory facts,
the cosines of the keyword matches beyond the vector top, the BM25 of the vector hits beyond the
keyword top) in one, or only its turns and texts in one. A back-end whose keyword statement can
score given memories too (``Shortcuts.keyword_scoring``) has the vector lane go first when the
query's vector needs nothing of the keyword top (it names no speakers): the keyword statement then
scores the vector top as well, and the BM25 of its memories beyond the keyword top is known.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple, Protocol

from remem.backends.analyzer import is_cjk
from remem.backends.base import PoolAnswer, PoolRequest, Scored, TurnTime

if TYPE_CHECKING:
    from remem.arrays import FloatArray
    from remem.backends.base import Coverage, VectorLane
    from remem.types import Filters, ModelInfo


class Wanted(NamedTuple):
    """What the last step of a hybrid pool asks of the pooled memories (``facts``)."""

    #: Every pooled memory (their turns; their texts when asked).
    ids: Sequence[int]
    #: The keyword matches (their coverage).
    matches: Sequence[int]
    #: The memories whose texts are known already.
    known: Collection[int]
    #: The query's vector, and the keyword matches beyond the vector top (their cosines).
    vector: FloatArray
    extra: Sequence[int]
    #: The vector top's memories beyond the keyword top (their BM25; the matches among them their
    #: coverage too).
    missing: Sequence[int]


class Facts(NamedTuple):
    """What the last step of a hybrid pool reads of the pooled memories (``facts``)."""

    turns: dict[int, TurnTime]
    coverage: Coverage | None
    texts: dict[int, str]
    #: (memory id, cosine of its best window) of the extra keyword matches, best first.
    cosines: list[Scored]
    #: (memory id, BM25) of the missing memories that match, as ``keyword_top`` among them ranks them.
    scored: Sequence[Scored]


class Primitives(Protocol):
    """The lane primitives a back-end composes its pool of (``Backend``'s methods of these names)."""

    def keyword_top(
        self,
        text: str,
        filters: Filters,
        k: int,
        among: Sequence[int] | None = None,
        scope: Filters | None = None,
    ) -> list[Scored]:
        """``Backend.keyword_top``."""
        ...

    def texts_holding(self, words: Sequence[str], filters: Filters) -> list[tuple[int, str]]:
        """``Backend.texts_holding``."""
        ...

    def turn_times(self, memory_ids: Sequence[int]) -> dict[int, TurnTime]:
        """``Backend.turn_times``."""
        ...

    def texts(self, memory_ids: Sequence[int]) -> dict[int, str]:
        """``Backend.texts``."""
        ...

    def keyword_coverage(
        self, text: str, memory_ids: Sequence[int], enough: float, scope: Filters | None = None
    ) -> Coverage:
        """``Backend.keyword_coverage``."""
        ...

    def vector_lane(self, embedded_with: ModelInfo | None = None) -> VectorLane:
        """``Backend.vector_lane``."""
        ...


#: The turns among some memories (``turn_times``) and the texts of some of them (``texts``).
TurnsAndTexts = Callable[[Sequence[int], Sequence[int]], tuple[dict[int, TurnTime], dict[int, str]]]
#: The BM25 of some memories beyond the keyword lane's top, as ``keyword_top`` among them gives it,
#: from what the keyword step read (None: not known there).
Beyond = Callable[[Sequence[int]], list[Scored] | None]


def facts(
    store: Primitives,
    lane: VectorLane,
    request: PoolRequest,
    wanted: Wanted,
    read: TurnsAndTexts | None = None,
    beyond: Beyond | None = None,
) -> Facts:
    """What ``wanted`` asks (``Wanted``; texts when the request asks for them), each by its own
    primitive; the turns and the texts in one go by ``read`` if given, the missing memories' BM25
    by ``beyond`` where it knows it (``Shortcuts``)."""
    missing = wanted.missing
    text, filters, scope = request.text, request.filters, request.scope
    known = beyond(missing) if beyond is not None and missing else None
    scored = known if known is not None else []
    if known is None and missing:
        scored = store.keyword_top(text, filters, len(missing), missing, scope)
    unknown = [mid for mid in wanted.ids if mid not in wanted.known] if request.texts else []
    if read is not None and unknown:
        turns, texts = read(wanted.ids, unknown)
    else:
        turns = store.turn_times(wanted.ids) if wanted.ids else {}
        texts = store.texts(unknown) if unknown else {}
    matches = [*wanted.matches, *(mid for mid, _ in scored)]
    coverage = (
        store.keyword_coverage(request.text, matches, request.enough, request.scope) if matches else None
    )
    cosines = lane.cosines(wanted.vector, wanted.extra) if wanted.extra else []
    return Facts(turns, coverage, texts, cosines, scored)


#: Reads a pool's last step in one go where a back-end can (default: ``facts``).
FactsOf = Callable[[PoolRequest, Wanted], Facts]
#: A lane's top over the request's filters, and its top within the window (None without one).
Tops = tuple[list[Scored], list[Scored] | None]
Turns = dict[int, TurnTime]


class Shortcuts(NamedTuple):
    """Steps of a pool a back-end reads in fewer round trips than by its primitives (None: by them)."""

    #: The keyword lane's ``Tops`` of ``depth`` (only ``among`` if given), and the turns among them
    #: when the request may name speakers (None: not read).
    keyword: Callable[[PoolRequest, Sequence[int] | None], tuple[Tops, Turns | None]] | None = None
    #: The vector lane's ``Tops`` of ``depth`` for the query's vector (never over phrase holders).
    vector: Callable[[PoolRequest, FloatArray], Tops] | None = None
    #: The last step of a hybrid pool.
    facts: FactsOf | None = None
    #: In the last step of a hybrid pool by the primitives (``facts``), the pooled memories' turns
    #: and the texts asked for, in one read.
    turns_and_texts: TurnsAndTexts | None = None
    #: In that step, the BM25 of the vector top's memories beyond the keyword top, where known.
    beyond: Beyond | None = None
    #: ``keyword``, its statement scoring the given memories too (known afterwards by ``beyond``):
    #: the vector lane then goes first when the query's vector needs nothing of the keyword top.
    keyword_scoring: (
        Callable[[PoolRequest, Sequence[int] | None, Sequence[int]], tuple[Tops, Turns | None]] | None
    ) = None


#: No shortcut: every step by the primitives.
NONE = Shortcuts()


def merged(tops: Tops) -> tuple[list[Scored], set[int]]:
    """A lane's list over the filters and, with a window, its top within the window merged in (by
    score); the ids from the window. A lane's top within the window holds every member of its top
    over the filters that is from then, so every such candidate is marked."""
    found, inside = tops
    if inside is None:
        return found, set()
    seen = {mid for mid, _ in found}
    joined = sorted(found + [item for item in inside if item[0] not in seen], key=lambda item: -item[1])
    return joined, {mid for mid, _ in inside}


@dataclass
class _Gathering:
    """One pool being gathered: the store, the request, the phrase holders, the vector lane."""

    store: Primitives
    request: PoolRequest
    among: list[int] | None = None
    lane: VectorLane | None = None
    shortcuts: Shortcuts = NONE

    def windowed(self, fetch: Callable[[Filters], list[Scored]]) -> tuple[list[Scored], set[int]]:
        """A lane's list over the filters and, with a window, its top within the window (``merged``)."""
        window = self.request.window
        return merged((fetch(self.request.filters), None if window is None else fetch(window)))

    def keyword(
        self, scoring: Sequence[int] | None = None
    ) -> tuple[list[Scored], set[int], dict[int, TurnTime] | None]:
        """The keyword lane's ``windowed`` top of ``depth`` (and its turns, by the shortcut); its
        statement scoring the memories ``scoring`` too, by the shortcut that can."""
        if scoring is not None and self.shortcuts.keyword_scoring is not None:
            tops, turns = self.shortcuts.keyword_scoring(self.request, self.among, scoring)
            return *merged(tops), turns
        if self.shortcuts.keyword is None:
            return *self.windowed(self.keyword_top), None
        tops, turns = self.shortcuts.keyword(self.request, self.among)
        return *merged(tops), turns

    def vector(self, vector: FloatArray) -> tuple[list[Scored], set[int]]:
        """The vector lane's ``windowed`` top of ``depth``."""
        if self.shortcuts.vector is None or self.among is not None:
            return self.windowed(lambda f: self.cosine_top(vector, f))
        return merged(self.shortcuts.vector(self.request, vector))

    def keyword_top(self, filters: Filters) -> list[Scored]:
        """The keyword lane's top of the request's depth (only the phrase holders, if any)."""
        return self.store.keyword_top(
            self.request.text, filters, self.request.depth, self.among, self.request.scope
        )

    def cosine_top(self, vector: FloatArray, filters: Filters) -> list[Scored]:
        """The vector lane's top among the filtered memories (only the phrase holders if given)."""
        assert self.lane is not None
        if self.among is None:
            return self.lane.top(vector, self.request.depth, filters)
        return self.lane.cosines(vector, self.among)[: self.request.depth]


def gather(store: Primitives, request: PoolRequest, shortcuts: Shortcuts = NONE) -> PoolAnswer:
    """The pool ``request`` asks for (see the module docstring), from ``store``'s primitives and
    the ``shortcuts`` given; when it gives the query's script (``cjk``), the vector lane's
    memories written in the other one (``PoolAnswer.unread``)."""
    answer = _lanes(store, request, shortcuts)
    if request.cjk is None:
        return answer
    texts = answer.texts  # a memory without its text counts as empty
    return replace(
        answer, unread=frozenset(m for m, _ in answer.vector if is_cjk(texts.get(m, "")) != request.cjk)
    )


def _lanes(store: Primitives, request: PoolRequest, shortcuts: Shortcuts) -> PoolAnswer:
    """The lanes' lists and the pooled memories' facts ``request`` asks for."""
    texts: dict[int, str] = {}
    gathering = _Gathering(store, request, shortcuts=shortcuts)
    if request.holds is not None:
        texts = holders(store, request.phrase_words, request.holds, request.filters)
        if not texts:
            return PoolAnswer(held=False)
        gathering.among = list(texts)
    if request.vector is not None:
        gathering.lane = store.vector_lane(request.model)
    if request.hybrid:
        lane = gathering.lane
        assert lane is not None
        read, beyond = shortcuts.turns_and_texts, shortcuts.beyond
        by_primitives: FactsOf = lambda request, wanted: facts(store, lane, request, wanted, read, beyond)  # noqa: E731
        return _hybrid(gathering, texts, shortcuts.facts or by_primitives)
    if request.vector is None:
        found, inside, _ = gathering.keyword()
        answer = PoolAnswer(keyword=found, inside=frozenset(inside), coverage=_weight(store, request, found))
    else:
        vector = request.vector({})
        found, inside = gathering.vector(vector)
        answer = PoolAnswer(vector=found, inside=frozenset(inside))
    return replace(answer, texts=_texts(store, request, [mid for mid, _ in found], texts))


def _weight(store: Primitives, request: PoolRequest, found: Sequence[Scored]) -> Coverage | None:
    """A keyword pool's coverage of no memory: only the query's IDF weight (None when nothing
    matched), which its shown score counts BM25 against; asking no memory's terms reads only the
    terms' statistics (0.1 ms instead of 3 ms a query on SciFact)."""
    if not found:
        return None
    return store.keyword_coverage(request.text, [], request.enough, request.scope)


def holders(
    store: Primitives, words: Sequence[str], holds: Callable[[str], bool], filters: Filters
) -> dict[int, str]:
    """Memory id → text of every filtered memory holding the required phrases, looked for in the
    whole store: the keyword index proposes the memories holding ``words``, ``holds`` decides."""
    return {mid: text for mid, text in store.texts_holding(words, filters) if holds(text)}


def _texts(
    store: Primitives, request: PoolRequest, ids: Sequence[int], known: dict[int, str]
) -> dict[int, str]:
    """``known`` and, when asked, the texts of those of ``ids`` not in it."""
    missing = [mid for mid in ids if mid not in known] if request.texts else []
    return known | store.texts(missing) if missing else known


def _hybrid(gathering: _Gathering, texts: dict[int, str], facts_of: FactsOf) -> PoolAnswer:
    """A hybrid pool: both lanes' tops, each scoring the other's (see the module docstring)."""
    request, store, lane = gathering.request, gathering.store, gathering.lane
    assert request.vector is not None and lane is not None
    if gathering.shortcuts.keyword_scoring is not None and not request.speakers:
        vector = request.vector({})  # needs nothing of the keyword top: the vector lane first
        top, inside_top = gathering.vector(vector)
        by_keyword, inside, turns = gathering.keyword([mid for mid, _ in top])
    else:
        by_keyword, inside, turns = gathering.keyword()
        spoken = request.speakers and bool(by_keyword)
        if spoken and turns is None:
            turns = store.turn_times([mid for mid, _ in by_keyword])
        vector = request.vector((turns or {}) if spoken else {})
        top, inside_top = gathering.vector(vector)
    seen = {mid for mid, _ in top}
    extra = [mid for mid, _ in by_keyword if mid not in seen]
    matched = {mid for mid, _ in by_keyword}
    missing = [mid for mid, _ in top if mid not in matched]  # the extra ones are all matched
    ids = list(dict.fromkeys([mid for mid, _ in by_keyword] + [mid for mid, _ in top]))
    found = facts_of(request, Wanted(ids, [mid for mid, _ in by_keyword], texts, vector, extra, missing))
    by_keyword, by_vector = [*by_keyword, *found.scored], top + found.cosines
    return PoolAnswer(
        by_keyword,
        by_vector,
        frozenset(inside | inside_top),
        found.turns,
        found.coverage,
        texts | found.texts,
    )
