"""Speakers named in a query: "What did Gina want her customers to feel in her store?" asks about
what Gina said.

In a conversation each turn has its speaker (its ``role``), and a question that names one of them is
about that speaker's turns (LoCoMo: 96% of the evidence of a question naming one of the two speakers
is that speaker's). Yet the name pulls the query's vector towards every short turn that names them
("Hey Gina! How's the store going?", said by the other speaker), and away from what they said
("I want my customers to feel cozy"), which rarely names its own speaker.

So in hybrid search, when the query names, as written (a whole word, same case), the role of some of
the pooled turns of a conversation but not of all of them, and that role is a name (it starts with
a capital letter, so ``user``/``assistant`` never count):

- the vector lane scores the pool with the query *without* those names (and their ``'s``): "What did
  want her customers to feel in her store?";
- after fusion and the session mates, each turn of a named speaker gains ``SPEAKER_WEIGHT``.

The keyword lane keeps the names (a turn's role is one of its keyword terms). A query naming every
pooled speaker, or nothing but names, ranks as before; so does a store without conversations.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from remem.backends.base import TurnTime

#: What a named speaker's turn adds to its fused score (z-score units, after the session mates).
#: Measured with bench/fusion_lab.py (its re-fusion reproduces search exactly) on LoCoMo (evidence
#: recall@10, time words not read; tuning / held-out conversations, seed 31); SciFact and the
#: memory-shaped set have no conversations and do not change (0.7417, 0.907). Bundled model
#: (multilingual-e5-small beside it, never tuned on):
#:   before (session mates):               0.7232 / 0.7491 (all 0.7362); e5 0.7557.
#:   the vector without the names, weight 1.25: 0.7730 / 0.7915 (0.7823); e5 0.7870.
#:   weight 0.5: 0.7641 / 0.7827 (0.7735); 0.75: 0.7767; 1.0: 0.7704 / 0.7899 (0.7802);
#:   1.5: 0.7704 / 0.7906 (0.7806); 2.0: 0.7795. e5: 0.5 0.7795, 1.0 0.7841, 1.5 0.7872, 2.0 0.7866.
#:   The weight alone, names kept in the vector: 1.0 0.7564, 1.25 0.7565 (e5 0.7748); the vector
#:   without the names alone: 0.7531 (e5 0.7656). Names also dropped from the keyword lane: 1.0
#:   0.7769, 1.5 0.7804. The weight before the session mates instead of after: 1.0 0.7519.
SPEAKER_WEIGHT = 1.25


def named(query: str, times: Mapping[int, TurnTime]) -> frozenset[str]:
    """The speakers (roles that are names) of the pooled turns ``times`` that ``query`` names as
    written, unless it names all of them (see the module docstring); empty when none."""
    roles = {turn.role for turn in times.values() if turn.role and turn.role.strip()[:1].isupper()}
    found = frozenset(role for role in roles if _name(role).search(query))
    return found if found != roles else frozenset()


def without(query: str, names: Iterable[str]) -> str:
    """``query`` without ``names`` (each with its ``'s``), spaces tidied; '' when no word is left."""
    text = query
    for name in sorted(names, key=len, reverse=True):
        text = _name(name, possessive=True).sub(" ", text)
    text = re.sub(r"\s+([?!.,;:])", r"\1", re.sub(r"\s+", " ", text)).strip()
    text = re.sub(r"[,;:]+(?=[?!.]|$)", "", text)  # "open, Gina?" → "open?"
    return text if re.search(r"\w", text) else ""


def lifts(times: Mapping[int, TurnTime], names: Collection[str]) -> dict[int, float]:
    """What each pooled turn of a named speaker adds to its score: ``SPEAKER_WEIGHT``."""
    return {mid: SPEAKER_WEIGHT for mid, turn in times.items() if turn.role in names}


def _name(name: str, possessive: bool = False) -> re.Pattern[str]:
    """``name`` as a whole word (or words), as written; with ``possessive``, its ``'s`` too."""
    tail = r"(?:['’]s)?" if possessive else ""
    return re.compile(r"(?<!\w)" + re.escape(name.strip()) + tail + r"(?!\w)")
