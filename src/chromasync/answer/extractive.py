"""The extractive answer: the retrieved chunks' best sentences, each with its citation.

Design notes: docs/internals.md, `answer/extractive.py`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..chunk.blocks import Block, Prose, Segment, inline_text, segment
from ..records import Hit
from .examples import Example, Page, find_example
from .records import Answer, Citation, Group, Part, citation_for
from .terms import STOP_WORDS as STOP_WORDS
from .terms import stem as stem
from .terms import terms_of

MAX_HITS = 50
MAX_TEXT_CHARS = 20_000
MAX_SENTENCES_PER_HIT = 300
MAX_SENTENCE_CHARS = 400
MIN_SENTENCE_CHARS = 12
MAX_GROUPS = 12
QUOTE_CHARS = 240
#: A spread pick (a further hit's best sentence) is cut to fit when this much room is left.
MIN_CUT_CHARS = 120
#: Blocks (code, lists, tables) an answer quotes at most, each within blocks.BLOCK_MAX_CHARS.
MAX_BLOCKS = 2
#: The weight of the hit's rank in a sentence's relevance (the rest is its BM25).
RANK_PRIOR = 0.2
#: Sentences of each document in a per-document answer (`latest`: the N newest documents).
PER_DOCUMENT = 2

_WORD = re.compile(r"[^\W_]+")
_LAST_MARKER = re.compile(r"\[(\d+)\]\s*$")
#: A sentence ends at . ! ? (with closing quotes/brackets) followed by space and a capital,
#: digit or opening mark; abbreviations like "e.g." and "et al." do not end one.
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_NO_END = re.compile(r"(?:\b(?:e\.g|i\.e|etc|al|vs|cf|Fig|fig|Dr|Mr|Mrs|Ms|No|approx)|\b[A-Z])\.$")


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence of hit number `rank` (0 = best), at character `offset` of its text."""

    rank: int
    offset: int
    text: str
    start_line: int  # file lines; 0 when the hit's lines are unknown
    end_line: int
    terms: tuple[str, ...]
    block: Block | None = None  # the code, list or table this sentence leads into


@dataclass(frozen=True, slots=True)
class Scored:
    sentence: Sentence
    relevance: float


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = text[:limit].rsplit(" ", 1)[0]
    return head.rstrip(",;: ") + "…"


def _leads_into(segments: Sequence[Segment], i: int, text: str) -> Block | None:
    """The block right after prose segment `i` (only blank lines between), if any."""
    if i + 1 >= len(segments):
        return None
    prose, after = segments[i], segments[i + 1]
    if not isinstance(prose, Prose) or not isinstance(after, Block):
        return None
    gap = text[prose.offset + len(prose.text) : after.offset]
    return after if not gap.strip() else None


def split_sentences(
    hit: Hit, rank: int, segments: Sequence[Segment] | None = None
) -> list[Sentence]:
    """The sentences of `hit` (rank `rank`), with their file lines; bounded in count.

    A paragraph's last sentence that ends in a colon and is followed by a block (code, a
    list, a table) carries that block; one ending in a colon with no block after it is not
    a sentence (it introduces something the answer cannot show); list items under a carried
    list are not sentences of their own.
    """
    text = hit.text[:MAX_TEXT_CHARS]
    if segments is None:
        segments = segment(text)
    out: list[Sentence] = []
    carried: list[Block] = []
    for index, item in enumerate(segments):
        if not isinstance(item, Prose):
            continue
        base, paragraph = item.offset, item.text
        follow = _leads_into(segments, index, text)
        pieces: list[tuple[int, int]] = []
        begin = 0
        for match in _BOUNDARY.finditer(paragraph):
            if _NO_END.search(paragraph[max(begin, match.start() - 12) : match.start()]):
                continue
            pieces.append((begin, match.start()))
            begin = match.end()
        pieces.append((begin, len(paragraph)))
        for number, (lo, hi) in enumerate(pieces):
            raw = paragraph[lo:hi]
            body = inline_text(" ".join(raw.split()).lstrip("-*+> "))
            if len(body) < MIN_SENTENCE_CHARS:
                continue
            block = follow if number == len(pieces) - 1 else None
            if body.endswith(":") and block is None:
                continue
            if not body.endswith(":"):
                block = None
            offset = base + lo + (len(raw) - len(raw.lstrip()))
            first = text.count("\n", 0, offset)
            last = block.last_line if block else first + raw.strip().count("\n")
            lines = (0, 0)
            if hit.start_line > 0:
                lines = (hit.start_line + first, hit.start_line + last)
            terms = terms_of(body) + (terms_of(block.text) if block else ())
            out.append(Sentence(rank, offset, _cut(body, MAX_SENTENCE_CHARS), *lines, terms, block))
            if block is not None:
                carried.append(block)
            if len(out) >= MAX_SENTENCES_PER_HIT:
                break
        if len(out) >= MAX_SENTENCES_PER_HIT:
            break
    lists = [b for b in carried if b.kind == "list"]
    if lists:  # the items of a carried list are quoted with it, not again as sentences
        out = [s for s in out if not any(b.offset <= s.offset < b.end for b in lists)]
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
        Scored(s, (1 - RANK_PRIOR) * score / top + RANK_PRIOR / (1 + s.rank))
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
    """Pick sentences by maximal marginal relevance within the count and character bounds,
    near-duplicates (`duplicate`) left out and `spread` sources given room first
    (docs/internals.md). O(len(scored) * max_sentences)."""
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
        # a spread pick gets its fair share of the room; any later one the room it fits
        limit = max(room // (spread - len(chosen)), MIN_CUT_CHARS) if fresh else room
        if (chosen or fresh) and len(pick[0].sentence.text) > limit:
            sentence = replace(pick[0].sentence, text=_cut(pick[0].sentence.text, limit - 1))
            pick = (Scored(sentence, pick[0].relevance), pick[1])
        chosen.append(pick)
        cited.add(pick[0].sentence.rank)
        used += len(pick[0].sentence.text) + 1
    return [s for s, _ in chosen]


class _Numbering:
    """Source numbers by first use, shared by every group of one answer."""

    def __init__(self, hits: Sequence[Hit]) -> None:
        self.hits = list(hits)  # then the chunks read for an example (`add`)
        self.number: dict[int, int] = {}  # hit rank -> n
        self.lines: dict[int, tuple[int, int]] = {}
        self.quotes: dict[int, str] = {}

    def add(self, hit: Hit) -> int:
        """A chunk that is not a hit (read from a page for its example): its rank."""
        self.hits.append(hit)
        return len(self.hits) - 1

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
    max_blocks: int = MAX_BLOCKS,
    page: Page | None = None,
    min_share: float = 0.3,
) -> tuple[str, list[int], list[Part]]:
    """The answer text for hits `ranked` ((rank, hit) pairs), the ranks it cites and its
    parts: runs of cited sentences, the blocks (at most `max_blocks`) they lead into, and
    the best page's code example (`_example`) after that page's sentences, or first when
    none of them was chosen (a place among the blocks is kept for it)."""
    segmented = {rank: segment(hit.text[:MAX_TEXT_CHARS]) for rank, hit in ranked}
    sentences = [s for rank, hit in ranked for s in split_sentences(hit, rank, segmented[rank])]
    scored = score_sentences(question, sentences, min_share=min_share)
    if not scored and sentences:  # nothing shares a word: the best hit's opening sentence
        scored = [Scored(sentences[0], 0.0)]
    chosen = select_mmr(
        scored, max_sentences=max_sentences, max_chars=max_chars, lam=lam, spread=spread
    )
    chosen.sort(key=lambda s: (s.sentence.rank, s.sentence.offset))
    parts: list[Part] = []
    ranks: list[int] = []
    run: list[str] = []
    blocks = 0

    def flush() -> None:
        if run:
            parts.append(Part("prose", " ".join(run)))
            run.clear()

    def place_example(found: Example) -> None:
        nonlocal blocks
        rank = numbering.add(found.hit) if found.rank is None else found.rank
        code = found.block
        n = numbering.cite(_block_sentence(rank, code, found.hit))
        if rank not in ranks:
            ranks.append(rank)
        flush()
        parts.append(Part(code.kind, code.text, n, code.lang))
        blocks += 1

    example = None
    if max_blocks > 0:
        cited = {s.sentence.rank for s in chosen}
        shows_code = {
            s.sentence.rank for s in chosen if s.sentence.block and s.sentence.block.kind == "code"
        }
        example = find_example(question, ranked, segmented, cited, shows_code, page)
    if example is not None and not any(s.sentence.rank == example.follows for s in chosen):
        place_example(example)  # the best page has no chosen sentence: its example leads
        example = None
    for i, item in enumerate(chosen):
        sentence = item.sentence
        room = max_blocks - (1 if example is not None else 0)  # the example's place is kept
        block = sentence.block if blocks < room else None
        text = sentence.text
        if sentence.block is not None and block is None:  # its block is past the budget
            text = text.rstrip(":").rstrip() + "."
            # it ends on its own last line, without the block it led into
            sentence = replace(sentence, end_line=sentence.start_line or sentence.end_line)
        n = numbering.cite(sentence)
        if sentence.rank not in ranks:
            ranks.append(sentence.rank)
        run.append(f"{text} [{n}]")
        if block is not None:
            flush()
            parts.append(Part(block.kind, block.text, n, block.lang))
            blocks += 1
        last_of_hit = i + 1 == len(chosen) or chosen[i + 1].sentence.rank != sentence.rank
        if example is not None and example.follows == sentence.rank and last_of_hit:
            place_example(example)
            example = None
    flush()
    return render_parts(parts), ranks, parts


def _block_sentence(rank: int, block: Block, hit: Hit) -> Sentence:
    """`block` of `hit` (rank `rank`) as a citable piece: the lines its citation must cover."""
    start_line = hit.start_line
    lines = (0, 0)
    if start_line > 0:
        lines = (start_line + block.first_line, start_line + block.last_line)
    return Sentence(rank, block.offset, block.text, *lines, (), block)


def render_parts(parts: Sequence[Part]) -> str:
    """The answer's text: prose runs as paragraphs, each block as Markdown between them. A
    block that does not follow a sentence of its own source (the best page's example) is
    followed by its marker on a line of its own, so the text says where it is quoted from."""
    out: list[str] = []
    for i, part in enumerate(parts):
        out.append(part.markdown())
        if part.kind == "prose" or part.n <= 0:
            continue
        before = parts[i - 1] if i else None
        last = _LAST_MARKER.search(before.text) if before and before.kind == "prose" else None
        if last is None or int(last.group(1)) != part.n:
            out.append(f"[{part.n}]")
    return "\n\n".join(out)


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
    spread: int = 3,
    page: Page | None = None,
    per_document: bool = False,
) -> Answer:
    """The extractive answer to `question` from `hits` (best first; at most `MAX_HITS`).

    `page`: reads a hit's other indexed chunks, where the best page's example is looked
    for when its retrieved chunks hold none (`examples.find_example`). `per_document`
    (the N newest documents, `latest`): one paragraph per document, in the hits' order,
    each of that document's most query-relevant sentences (`PER_DOCUMENT` at most, scored
    among its own sentences, every one sharing a word with the question a candidate, so
    that MMR's second pick is not a rewording of the first), so that every document speaks."""
    hits = list(hits[:MAX_HITS])
    numbering = _Numbering(hits)
    if group_by is None and not per_document:
        ranked = list(enumerate(hits))
        text, _, parts = _compose(
            question, ranked, numbering, max_sentences, max_chars, lam, spread, page=page
        )
        return Answer(question, text, numbering.citations(), "extractive", parts=tuple(parts))
    buckets: dict[str, list[tuple[int, Hit]]] = {}
    for rank, hit in enumerate(hits):
        where = f"{hit.collection}\0{hit.source}\0{hit.path}"
        key = group_value(hit, group_by) if group_by else where
        buckets.setdefault(key, []).append((rank, hit))
    groups: list[Group] = []
    blocks: list[str] = []
    all_parts: list[Part] = []
    count, share = (max(1, min(max_sentences, 3)), 0.3) if group_by else (PER_DOCUMENT, 0.0)
    for value, ranked in list(buckets.items())[: MAX_GROUPS if group_by else MAX_HITS]:
        text, ranks, parts = _compose(
            question, ranked, numbering, count, max_chars, lam, spread, page=page, min_share=share
        )
        if not text:
            continue
        all_parts.extend(parts)
        if group_by:
            groups.append(Group(value, text, numbering.citations(ranks)))
        blocks.append(f"{group_by}: {value}\n{text}" if group_by else text)
    return Answer(
        question,
        "\n\n".join(blocks),
        numbering.citations(),
        "extractive",
        group_by=group_by,
        groups=tuple(groups),
        parts=tuple(all_parts),
    )


__all__ = [
    "MAX_HITS",
    "Scored",
    "Sentence",
    "answer_extractive",
    "group_value",
    "jaccard",
    "render_parts",
    "score_sentences",
    "select_mmr",
    "split_sentences",
    "terms_of",
]
