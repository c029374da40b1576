"""Does each cited sentence say what its source says? A check after generation.

Design notes: docs/internals.md, `answer/support.py`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..records import Hit
from .extractive import terms_of
from .terms import STOP_WORDS
from .verify import MARKER

SUPPORT_FLOOR = 0.05
STRONG = 0.8
BETTER_BY = 0.15
#: The support of a claim holding a figure or a name its source does not (an invented fact).
FACT_MISSING_CAP = 0.0
MIN_CLAUSE_TERMS = 4
#: A claim with fewer content words than this is not judged.
MIN_CHECK_TERMS = 3
#: Source text read per source (a hit's text is bounded upstream; this keeps the check so).
MAX_SOURCE_CHARS = 20_000

_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?:[ \t]*\[\d[\d,\s]*\])*(?=\s|$)|\n")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
_DOTTED = re.compile(r"\b[A-Za-z]\w*(?:\.[A-Za-z]\w*)+")
_WORDS = re.compile(r"[^\W_]+")
#: Before a word that may be capitalised for its place, not for being a name.
_OPENERS = ".!?:;"


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
    """The content words (a final "e" dropped), and each dotted name whole ("=time.format")."""
    words = {t[:-1] if t.endswith("e") and len(t) > 3 else t for t in terms_of(text)}
    return words | {"=" + n.lower() for n in _DOTTED.findall(text)}


def _shown(hit: Hit) -> str:
    """What the model was shown of a source: its path and heading (the header), its text."""
    return f"{hit.path}\n{hit.heading}\n{hit.text[:MAX_SOURCE_CHARS]}"


def _figures(text: str) -> set[str]:
    """The figures that must appear in a source: numbers of two or more digits, or with a
    decimal part (a year, a version, an amount); a single digit is an ordinary word."""
    found = (n.replace(",", ".") for n in _NUMBER.findall(text))
    return {n for n in found if len(n) > 1}


def _names(claim: str) -> set[str]:
    """The claim's names, lower-cased: its words with a capital letter, but stop words and
    a word that opens the claim, a line or a list item, or follows a full stop or a colon."""
    out: set[str] = set()
    last: int | None = None
    for match in _WORDS.finditer(claim):
        gap = claim[last : match.start()] if last is not None else None
        last = match.end()
        word = match.group()
        if gap is None or word.islower() or word.isdigit() or word.lower() in STOP_WORDS:
            continue
        stripped = gap.rstrip()
        opens_line = "\n" in gap and not gap.rsplit("\n", 1)[-1].strip(" \t-*+>#")
        if opens_line or (stripped and stripped != gap and stripped[-1] in _OPENERS):
            continue  # the first word of a line, a list item or a sentence
        out.add(word.lower())
    return out


#: Of some names, those the searched documents hold throughout (`ask.common_names`).
CommonNames = Callable[[Sequence[str]], set[str]]


class _Sources:
    def __init__(
        self, sources: Sequence[Hit], question: str = "", common: CommonNames | None = None
    ) -> None:
        self.common = common
        self.seen_common: dict[str, bool] = {}
        shown = [_shown(h) for h in sources]
        self.terms = [frozenset(_words(text)) for text in shown]
        self.numbers = [frozenset(_figures(text)) for text in shown]
        self.known = frozenset(
            w.lower() for text in [*shown, question] for w in _WORDS.findall(text)
        )
        df: dict[str, int] = {}
        for terms in self.terms:
            for term in terms:
                df[term] = df.get(term, 0) + 1
        self.df = df
        self.n = len(sources)

    def idf(self, term: str) -> float:
        return math.log((self.n + 1) / (self.df.get(term, 0) + 0.5))

    def unknown(self, claim: str) -> bool:
        """Whether the claim names something no source, the question nor (`common`) the
        documents throughout hold."""
        names = _names(claim) - self.known
        asked = sorted(n for n in names if n not in self.seen_common)
        if asked and self.common is not None:
            found = self.common(asked)
            self.seen_common.update((n, n in found) for n in asked)
        return any(not self.seen_common.get(n, False) for n in names)

    def supports(self, claim: str) -> list[float]:
        """How much of `claim` each source holds, 0-1 (all 1 for a claim too short to judge)."""
        terms = _words(claim)
        if len(terms) < MIN_CHECK_TERMS:
            return [1.0] * self.n  # "Done [2].": left as the model cited it
        weights = {t: self.idf(t) for t in terms}
        total = sum(weights.values())
        figures, invented = _figures(claim), self.unknown(claim)
        out = []
        for terms_of_source, numbers in zip(self.terms, self.numbers, strict=True):
            score = sum(w for t, w in weights.items() if t in terms_of_source) / total
            if invented or figures - numbers:
                score = min(score, FACT_MISSING_CAP)
            out.append(score)
        return out


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


def check_support(
    text: str, sources: Sequence[Hit], question: str = "", common: CommonNames | None = None
) -> SupportChecked:
    """`text` without the citations its sources do not support (docs/internals.md);
    the names of `question`, and those `common` returns (the documents' own: "Hugo" in
    Hugo's docs), are known as the sources' are."""
    if not sources or "[" not in text:
        return SupportChecked(text, ())
    index = _Sources(sources, question, common)
    dropped: list[Dropped] = []
    pieces: list[str] = []
    last = 0
    for marker, claim in _claims(text):
        numbers = [int(x) for x in marker.group(1).split(",")]
        scores = index.supports(claim)
        kept: list[int] = []
        for x in numbers:
            if not 1 <= x <= len(sources):  # names no source: check_citations removes it
                kept.append(x)
                continue
            score = scores[x - 1]
            best_other = max((s for i, s in enumerate(scores) if i != x - 1), default=0.0)
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
    "CommonNames",
    "Dropped",
    "SupportChecked",
    "check_support",
]
