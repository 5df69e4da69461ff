"""Speakers named in a query: "What did Gina want her customers to feel in her store?" asks about
what Gina said.

In a conversation each turn has its speaker (its ``role``), and a question that names one of them is
about that speaker's turns (LoCoMo: 96% of the evidence of a question naming one of the two speakers
is that speaker's). Yet the name pulls the query's vector towards every short turn that names them
("Hey Gina! How's the store going?", said by the other speaker), and away from what they said
("I want my customers to feel cozy"), which rarely names its own speaker.

So in hybrid search, the query's *speakers* are its capitalised words and runs of them (``candidates``)
that are, as written, the role of one of the keyword lane's candidate turns (a turn's role is one of
its keyword terms, so a named speaker's turns are among them; a role in lower case, such as ``user``
or ``assistant``, is never a capitalised word, so it never counts):

- the vector lane searches with the query *without* them (and their ``'s``): "What did want her
  customers to feel in her store?";
- after fusion and the session mates, each pooled turn of a named speaker gains ``SPEAKER_WEIGHT``,
  unless the query names every speaker among the pooled turns (then the gain would change nothing).

The keyword lane keeps the names. A store without conversations, or a query naming no speaker, ranks
as before.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING

from remem.core.search.dates import tidied

if TYPE_CHECKING:
    from remem.backends.base import TurnTime

#: What a named speaker's turn adds to its fused score (z-score units, after the session mates).
#: Measured on LoCoMo (evidence recall@10, time words not read; tuning / held-out conversations,
#: seed 31) with bench/fusion_lab.py, whose re-fusion reproduces search exactly; SciFact and the
#: memory-shaped set have no conversations and do not change (0.7417, 0.907). Bundled model
#: (multilingual-e5-small beside it, never tuned on):
#:   before (session mates):                     0.7232 / 0.7491 (all 0.7362); e5 0.7557.
#:   the vector without the names, weight 1.25:  0.7864 / 0.8000 (0.7932);     e5 0.7958.
#:   weight 0: 0.7628 (e5 0.7748); 0.5: 0.7872; 0.75: 0.7885; 1.0: 0.7845 / 0.7980 (0.7913);
#:   1.5: 0.7838 / 0.7984 (0.7911); 2.0: 0.7903. e5: 0.5 0.7876, 1.0 0.7927, 1.5 0.7951, 2.0 0.7951.
#:   Re-scoring the whole query's pool instead (a second embedding): the weight alone 0.7565 (e5
#:   0.7748); names kept in the vector where the query names every pooled speaker 0.7823 (e5
#:   0.7870); names also dropped from the keyword lane 0.7804 (at 1.5); the weight before the
#:   session mates instead of after 0.7519 (at 1.0).
SPEAKER_WEIGHT = 1.25
#: At most this many words run together in a speaker's name ("Mary Ann Lee").
NAME_WORDS = 3
#: At most this many names of a query are tried (a long pasted text holds many capitals).
MAX_CANDIDATES = 64

#: A word that starts with a capital letter, with its ``'s`` apart.
_CAPITALISED = re.compile(r"(?<![\w'’-])([^\W\d_a-z][\w'’-]*?)(?:['’]s)?(?![\w'’-])")


def candidates(query: str) -> list[str]:
    """The names ``query`` may hold: each run of up to NAME_WORDS capitalised words (one space
    apart), as written, in order, each once; at most MAX_CANDIDATES."""
    words = [m for m in _CAPITALISED.finditer(query) if m.group(1)[0].isupper()]
    found: dict[str, None] = {}
    for first in range(len(words)):
        run = [words[first]]
        for word in words[first + 1 : first + NAME_WORDS]:
            if query[run[-1].end(1) : word.start()] != " ":
                break
            run.append(word)
        for size in range(1, len(run) + 1):
            found[" ".join(m.group(1) for m in run[:size])] = None
    return list(found)[:MAX_CANDIDATES]


def named(names: Iterable[str], times: Mapping[int, TurnTime]) -> frozenset[str]:
    """The speakers a query names: those of its ``names`` (``candidates``) that are, as written, the
    role of one of the turns ``times``."""
    roles = {turn.role for turn in times.values() if turn.role}
    return frozenset(name for name in names if name in roles) if roles else frozenset()


def without(query: str, names: Iterable[str]) -> str:
    """``query`` without ``names`` (each with its ``'s``), spaces tidied; '' when no word is left."""
    text = query
    for name in sorted(names, key=len, reverse=True):
        text = _name(name).sub(" ", text)
    return tidied(re.sub(r"[,;:]+(?=\s*[?!.]|\s*$)", "", tidied(text)))  # "open, Gina?" → "open?"


def lifts(times: Mapping[int, TurnTime], names: Collection[str]) -> dict[int, float]:
    """What each pooled turn (``times``) of a named speaker adds to its score: ``SPEAKER_WEIGHT``,
    unless ``names`` name every speaker among them; empty when nothing is added."""
    spoken = {turn.role for turn in times.values() if turn.role}
    if not names or spoken <= set(names):
        return {}
    return {mid: SPEAKER_WEIGHT for mid, turn in times.items() if turn.role in names}


def _name(name: str) -> re.Pattern[str]:
    """``name`` as a whole word (or words), as written, with its ``'s``."""
    return re.compile(r"(?<![\w'’-])" + re.escape(name) + r"(?:['’]s)?(?![\w'’-])")
