"""The extractive answer: the retrieved chunks' best sentences, each with its citation.

No language model. The steps, each linear in its input (all inputs bounded first):

1. `split_sentences`: each hit's text (at most `MAX_TEXT_CHARS`) becomes sentences, each with
   the file line it starts on (`hit.start_line` + newlines before it) and ends on. Markdown
   headings, fences, tables and lines without a letter are not sentences; a sentence longer
   than `MAX_SENTENCE_CHARS` is cut at a word.
2. `score_sentences`: BM25 (k1 1.2, b 0.75) of the question's terms over the candidate
   sentences (IDF computed over those candidates), normalised to [0, 1], blended with the
   hit's rank as a prior: ``0.8 * bm25 + 0.2 / (1 + rank)``. Sentences sharing no term
   with the question, or scoring under 30 % of the best one, are not candidates (when no
   sentence shares a term, the top hit's first sentence answers).
3. `select_mmr`: maximal marginal relevance, ``lam * relevance - (1 - lam) * max Jaccard``
   with the sentences already chosen (terms as sets), until `max_sentences` or `max_chars`.
   The first `spread` picks come from distinct hits (source diversity: the best sentence
   of each of several hits first, so the answer cites more than the top hit), then MMR
   fills from any hit.
4. The chosen sentences are written in source order (hit rank, then position), each
   followed by ``[n]``; sources are numbered by first use.

`answer_extractive` groups the hits by a metadata field (or ``source``/``path``) when asked:
one part per value, groups ordered by their best hit, numbers shared across the answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..records import Hit
from .records import Answer, Citation, Group, citation_for

MAX_HITS = 50
MAX_TEXT_CHARS = 20_000
MAX_SENTENCES_PER_HIT = 300
MAX_SENTENCE_CHARS = 400
MIN_SENTENCE_CHARS = 12
MAX_GROUPS = 12
QUOTE_CHARS = 240
#: A spread pick (a further hit's best sentence) is cut to fit when this much room is left.
MIN_CUT_CHARS = 120

_WORD = re.compile(r"[^\W_]+")
#: A sentence ends at . ! ? (with closing quotes/brackets) followed by space and a capital,
#: digit or opening mark; abbreviations like "e.g." and "et al." do not end one.
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_NO_END = re.compile(r"(?:\b(?:e\.g|i\.e|etc|al|vs|cf|Fig|fig|Dr|Mr|Mrs|Ms|No|approx)|\b[A-Z])\.$")
_SKIP_LINE = re.compile(r"^\s*(?:#{1,6}\s|```|~~~|\||<[a-zA-Z/!]|[-=*_]{3,}\s*$)")
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "when",
        "where",
        "why",
        "does",
        "do",
        "did",
        "can",
        "could",
        "should",
        "would",
        "may",
        "might",
        "has",
        "have",
        "had",
        "been",
        "being",
        "from",
        "than",
        "so",
        "its",
        "our",
        "we",
        "you",
        "your",
        "i",
        "me",
        "my",
        "he",
        "she",
        "his",
        "her",
        "them",
        "those",
        "about",
        "over",
        "also",
        "more",
        "most",
        "other",
        "some",
        "any",
        "each",
        "per",
        "via",
    ]
)


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of hit number `rank` (0 = best), at character `offset` of its text."""

    rank: int
    offset: int
    text: str
    start_line: int  # file lines; 0 when the hit's lines are unknown
    end_line: int
    terms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Scored:
    sentence: Sentence
    relevance: float


def stem(word: str) -> str:
    """A light English stemmer: plural and a few verb endings (enough for term overlap)."""
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + keep
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def terms_of(text: str) -> tuple[str, ...]:
    """The text's lower-case, stemmed words, stop words dropped, in order."""
    return tuple(stem(w) for w in (m.lower() for m in _WORD.findall(text)) if w not in STOP_WORDS)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = text[:limit].rsplit(" ", 1)[0]
    return head.rstrip(",;: ") + "…"


def _paragraphs(text: str) -> list[tuple[int, str]]:
    """(offset, paragraph) for the text's prose: blank lines and non-prose lines split it."""
    out: list[tuple[int, str]] = []
    start = -1
    pos = 0
    in_fence = False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        fence = stripped.startswith(("```", "~~~"))
        prose = bool(stripped) and not in_fence and not fence and not _SKIP_LINE.match(line)
        prose = prose and any(c.isalpha() for c in stripped)
        if prose and start < 0:
            start = pos
        if not prose and start >= 0:
            out.append((start, text[start:pos]))
            start = -1
        if fence:
            in_fence = not in_fence
        pos += len(line)
    if start >= 0:
        out.append((start, text[start:pos]))
    return out


def split_sentences(hit: Hit, rank: int) -> list[Sentence]:
    """The sentences of `hit` (rank `rank`), with their file lines; bounded in count."""
    text = hit.text[:MAX_TEXT_CHARS]
    out: list[Sentence] = []
    for base, paragraph in _paragraphs(text):
        pieces: list[tuple[int, int]] = []
        begin = 0
        for match in _BOUNDARY.finditer(paragraph):
            if _NO_END.search(paragraph[max(begin, match.start() - 12) : match.start()]):
                continue
            pieces.append((begin, match.start()))
            begin = match.end()
        pieces.append((begin, len(paragraph)))
        for lo, hi in pieces:
            raw = paragraph[lo:hi]
            body = " ".join(raw.split()).lstrip("-*+> ")
            if len(body) < MIN_SENTENCE_CHARS:
                continue
            offset = base + lo + (len(raw) - len(raw.lstrip()))
            first = text.count("\n", 0, offset)
            last = first + raw.strip().count("\n")
            lines = (0, 0)
            if hit.start_line > 0:
                lines = (hit.start_line + first, hit.start_line + last)
            out.append(
                Sentence(rank, offset, _cut(body, MAX_SENTENCE_CHARS), *lines, terms_of(body))
            )
            if len(out) >= MAX_SENTENCES_PER_HIT:
                return out
    return out


def score_sentences(
    question: str,
    sentences: Sequence[Sentence],
    k1: float = 1.2,
    b: float = 0.75,
    min_share: float = 0.3,
) -> list[Scored]:
    """BM25 of the question over the sentences, normalised, blended with the rank prior.

    Only sentences sharing a term with the question, and scoring at least `min_share` of
    the best sentence's BM25, are returned (weak matches would only pad the answer).
    """
    query = set(terms_of(question)) or {w.lower() for w in _WORD.findall(question)}
    if not sentences or not query:
        return []
    df: dict[str, int] = {}
    for s in sentences:
        for term in set(s.terms) & query:
            df[term] = df.get(term, 0) + 1
    n = len(sentences)
    avg = sum(len(s.terms) for s in sentences) / n or 1.0
    idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    raw: list[tuple[Sentence, float]] = []
    for s in sentences:
        tf: dict[str, int] = {}
        for term in s.terms:
            if term in idf:
                tf[term] = tf.get(term, 0) + 1
        if not tf:
            continue
        norm = k1 * (1 - b + b * len(s.terms) / avg)
        score = sum(idf[t] * f * (k1 + 1) / (f + norm) for t, f in tf.items())
        raw.append((s, score))
    top = max((score for _, score in raw), default=0.0) or 1.0
    return [
        Scored(s, 0.8 * score / top + 0.2 / (1 + s.rank))
        for s, score in raw
        if score >= min_share * top
    ]


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def select_mmr(
    scored: Sequence[Scored],
    *,
    max_sentences: int = 4,
    max_chars: int = 600,
    lam: float = 0.7,
    duplicate: float = 0.8,
    spread: int = 0,
) -> list[Scored]:
    """Pick sentences by maximal marginal relevance within the count and character bounds.

    A sentence whose Jaccard similarity to one already chosen reaches `duplicate` is never
    chosen; one that would pass `max_chars` is skipped (the first is always taken). While
    fewer than `spread` sentences are chosen, a sentence of a hit already cited is passed
    over as long as another hit has a candidate, and one too long for the room left is cut
    at a word to fit (when at least `MIN_CUT_CHARS` are left). O(len(scored) * max_sentences).
    """
    pool = [(s, frozenset(s.sentence.terms)) for s in scored]
    chosen: list[tuple[Scored, frozenset[str]]] = []
    cited: set[int] = set()
    used = 0
    while pool and len(chosen) < max_sentences:
        fresh = len(chosen) < spread and any(c.sentence.rank not in cited for c, _ in pool)
        room = max_chars - used
        best_i, best_value = -1, -math.inf
        for i, (cand, terms) in enumerate(pool):
            if fresh and cand.sentence.rank in cited:
                continue
            overlap = max((jaccard(terms, t) for _, t in chosen), default=0.0)
            if overlap >= duplicate:
                continue
            too_long = chosen and len(cand.sentence.text) > room
            if too_long and not (fresh and room >= MIN_CUT_CHARS):
                continue
            value = lam * cand.relevance - (1 - lam) * overlap
            if value > best_value:
                best_i, best_value = i, value
        if best_i < 0 and fresh:  # no other hit's sentence fits: any hit's may
            spread = 0
            continue
        if best_i < 0:
            break
        pick = pool.pop(best_i)
        if chosen and len(pick[0].sentence.text) > room:  # a spread pick, cut to fit
            sentence = replace(pick[0].sentence, text=_cut(pick[0].sentence.text, room - 1))
            pick = (Scored(sentence, pick[0].relevance), pick[1])
        chosen.append(pick)
        cited.add(pick[0].sentence.rank)
        used += len(pick[0].sentence.text) + 1
    return [s for s, _ in chosen]


class _Numbering:
    """Source numbers by first use, shared by every group of one answer."""

    def __init__(self, hits: Sequence[Hit]) -> None:
        self.hits = hits
        self.number: dict[int, int] = {}  # hit rank -> n
        self.lines: dict[int, tuple[int, int]] = {}
        self.quotes: dict[int, str] = {}

    def cite(self, s: Sentence) -> int:
        if s.rank not in self.number:
            self.number[s.rank] = len(self.number) + 1
            self.quotes[s.rank] = _cut(s.text, QUOTE_CHARS)
            self.lines[s.rank] = (s.start_line, s.end_line)
        else:
            lo, hi = self.lines[s.rank]
            self.lines[s.rank] = (min(lo, s.start_line), max(hi, s.end_line))
        return self.number[s.rank]

    def citations(self, ranks: Sequence[int] | None = None) -> tuple[Citation, ...]:
        wanted = self.number if ranks is None else {r: self.number[r] for r in ranks}
        out = [
            citation_for(n, self.hits[rank], self.quotes[rank], self.lines[rank])
            for rank, n in wanted.items()
        ]
        return tuple(sorted(out, key=lambda c: c.n))


def _compose(
    question: str,
    ranked: Sequence[tuple[int, Hit]],
    numbering: _Numbering,
    max_sentences: int,
    max_chars: int,
    lam: float,
    spread: int = 0,
) -> tuple[str, list[int]]:
    """The answer text for hits `ranked` ((rank, hit) pairs) and the ranks it cites."""
    sentences = [s for rank, hit in ranked for s in split_sentences(hit, rank)]
    scored = score_sentences(question, sentences)
    if not scored and sentences:  # nothing shares a word: the best hit's opening sentence
        scored = [Scored(sentences[0], 0.0)]
    chosen = select_mmr(
        scored, max_sentences=max_sentences, max_chars=max_chars, lam=lam, spread=spread
    )
    chosen.sort(key=lambda s: (s.sentence.rank, s.sentence.offset))
    parts: list[str] = []
    ranks: list[int] = []
    for item in chosen:
        n = numbering.cite(item.sentence)
        if item.sentence.rank not in ranks:
            ranks.append(item.sentence.rank)
        parts.append(f"{item.sentence.text} [{n}]")
    return " ".join(parts), ranks


def group_value(hit: Hit, field: str) -> str:
    """The hit's value of `field`: ``source`` and ``path`` are the hit's own, else metadata."""
    if field == "source":
        return hit.source
    if field == "path":
        return hit.path
    value = hit.metadata.get(field)
    if value is None or value == "":
        return "(none)"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def answer_extractive(
    question: str,
    hits: Sequence[Hit],
    *,
    group_by: str | None = None,
    max_sentences: int = 4,
    max_chars: int = 600,
    lam: float = 0.7,
    value_of: Callable[[Hit, str], str] = group_value,
    spread: int = 3,
) -> Answer:
    """The extractive answer to `question` from `hits` (best first; at most `MAX_HITS`)."""
    hits = list(hits[:MAX_HITS])
    numbering = _Numbering(hits)
    if group_by is None:
        text, _ = _compose(
            question,
            list(enumerate(hits)),
            numbering,
            max_sentences,
            max_chars,
            lam,
            spread,
        )
        return Answer(question, text, numbering.citations(), "extractive")
    buckets: dict[str, list[tuple[int, Hit]]] = {}
    for rank, hit in enumerate(hits):
        buckets.setdefault(value_of(hit, group_by), []).append((rank, hit))
    groups: list[Group] = []
    blocks: list[str] = []
    per_group = max(1, min(max_sentences, 3))
    for value, ranked in list(buckets.items())[:MAX_GROUPS]:
        text, ranks = _compose(question, ranked, numbering, per_group, max_chars, lam, spread)
        if not text:
            continue
        groups.append(Group(value, text, numbering.citations(ranks)))
        blocks.append(f"{group_by}: {value}\n{text}")
    return Answer(
        question,
        "\n\n".join(blocks),
        numbering.citations(),
        "extractive",
        group_by=group_by,
        groups=tuple(groups),
    )


__all__ = [
    "MAX_HITS",
    "Scored",
    "Sentence",
    "answer_extractive",
    "group_value",
    "jaccard",
    "score_sentences",
    "select_mmr",
    "split_sentences",
    "terms_of",
]
