"""Does each cited sentence say what its source says? A check after generation.

`check_support(text, sources)` reads a model's answer whose ``[n]`` markers number
`sources` (1-based, before `verify.check_citations` renumbers them). For every marker it
takes the claim the marker closes: the words since the previous marker of the same sentence,
or the whole sentence when those are fewer than `MIN_CLAUSE_TERMS` content words. It scores
the claim against each source it cites:

    support = sum(idf(t) for t in claim if t in source) / sum(idf(t) for t in claim)

over the claim's content words (`extractive.terms_of`: lower-case, stemmed, stop words out;
then a final "e" dropped, so that the light stemmer's "site" and "sit" (sites) meet),
with ``idf(t) = ln((N + 1) / (df(t) + 0.5))`` over the N sources given to the model, so the
words every source shares (the topic) weigh little and the claim's particular words, names
and figures weigh most. A number in the claim that the source does not hold caps its support
at `NUMBER_MISSING_CAP`. A claim of fewer than `MIN_CHECK_TERMS` content words is not
judged. A citation is unsupported when its support is under `SUPPORT_FLOOR`,
or when another given source supports the claim by at least `BETTER_BY` more while its own is
under `STRONG` (a citation swapped for a source on the same topic).

An unsupported number is taken out of its marker (a marker left empty goes, with the space
before it), and counted; `Unsupported` rows say which sentence lost which source. Linear in
the answer's length times the sources cited per marker (both bounded upstream).

Measured on planted mis-citations in docs/benchmarks.md (`benchmarks/citation_support.py`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..records import Hit
from .extractive import terms_of
from .verify import MARKER

SUPPORT_FLOOR = 0.45
STRONG = 0.8
BETTER_BY = 0.3
NUMBER_MISSING_CAP = 0.3
MIN_CLAUSE_TERMS = 4
#: A claim with fewer content words than this is not judged.
MIN_CHECK_TERMS = 3
#: Source text read per source (a hit's text is bounded upstream; this keeps the check so).
MAX_SOURCE_CHARS = 20_000

_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?:[ \t]*\[\d[\d,\s]*\])*(?=\s|$)|\n")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)?(?![\w])")


@dataclass(frozen=True, slots=True)
class Dropped:
    """Source `n` (as the model numbered it) cited for `claim` with `support` (0-1)."""

    claim: str
    n: int
    support: float


@dataclass(frozen=True, slots=True)
class SupportChecked:
    text: str
    unsupported: tuple[Dropped, ...]


def _words(text: str) -> set[str]:
    return {t[:-1] if t.endswith("e") and len(t) > 3 else t for t in terms_of(text)}


class _Sources:
    def __init__(self, sources: Sequence[Hit]) -> None:
        self.terms = [frozenset(_words(h.text[:MAX_SOURCE_CHARS])) for h in sources]
        self.numbers = [
            frozenset(n.replace(",", ".") for n in _NUMBER.findall(h.text[:MAX_SOURCE_CHARS]))
            for h in sources
        ]
        df: dict[str, int] = {}
        for terms in self.terms:
            for term in terms:
                df[term] = df.get(term, 0) + 1
        self.df = df
        self.n = len(sources)

    def idf(self, term: str) -> float:
        return math.log((self.n + 1) / (self.df.get(term, 0) + 0.5))

    def support(self, claim: str, index: int) -> float:
        """How much of `claim` source `index` (0-based) holds, 0-1."""
        terms = _words(claim)
        if len(terms) < MIN_CHECK_TERMS:
            return 1.0  # too few words to judge ("Done [2]."): left as the model cited it
        total = sum(self.idf(t) for t in terms)
        held = sum(self.idf(t) for t in terms if t in self.terms[index])
        score = held / total if total > 0 else 1.0
        numbers = {n.replace(",", ".") for n in _NUMBER.findall(claim)}
        if numbers - self.numbers[index]:
            score = min(score, NUMBER_MISSING_CAP)
        return score


def _claims(text: str) -> list[tuple[re.Match[str], str]]:
    """Each marker of `text` with the claim it closes (markers taken out of the claim)."""
    out: list[tuple[re.Match[str], str]] = []
    start = 0
    ends = [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]
    for end in ends:
        sentence = text[start:end]
        markers = list(MARKER.finditer(text, start, end))
        whole = MARKER.sub(" ", sentence)
        clause_from = start
        for marker in markers:
            clause = MARKER.sub(" ", text[clause_from : marker.start()])
            claim = clause if len(terms_of(clause)) >= MIN_CLAUSE_TERMS else whole
            out.append((marker, claim))
            clause_from = marker.end()
        start = end
    return out


def check_support(text: str, sources: Sequence[Hit]) -> SupportChecked:
    """`text` without the citations its sources do not support (see the module docstring)."""
    if not sources or "[" not in text:
        return SupportChecked(text, ())
    index = _Sources(sources)
    dropped: list[Dropped] = []
    pieces: list[str] = []
    last = 0
    for marker, claim in _claims(text):
        numbers = [int(x) for x in marker.group(1).split(",")]
        scores = {x: index.support(claim, x - 1) for x in numbers if 1 <= x <= len(sources)}
        best_other = max(
            (index.support(claim, i) for i in range(len(sources)) if i + 1 not in scores),
            default=0.0,
        )
        kept: list[int] = []
        for x in numbers:
            score = scores.get(x)
            if score is None:  # names no source: check_citations removes and counts it
                kept.append(x)
                continue
            weak = score < SUPPORT_FLOOR or (score < STRONG and best_other - score >= BETTER_BY)
            if weak:
                dropped.append(Dropped(" ".join(claim.split())[:300], x, round(score, 3)))
            else:
                kept.append(x)
        pieces.append(text[last : marker.start()])
        if kept:
            lead = marker.group(0)[0] if marker.group(0)[0] in " \t" else ""
            pieces.append(f"{lead}[{', '.join(str(k) for k in kept)}]")
        last = marker.end()
    pieces.append(text[last:])
    return SupportChecked("".join(pieces), tuple(dropped))


__all__ = [
    "BETTER_BY",
    "STRONG",
    "SUPPORT_FLOOR",
    "Dropped",
    "SupportChecked",
    "check_support",
]
