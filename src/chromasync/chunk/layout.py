"""Measuring, splitting and packing: the machinery every chunker shares.

Design notes: docs/internals.md, `chunk/layout.py`.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import chain, islice

from ..records import Chunk
from . import Budget
from .filler import Filler
from .meter import JOINS, PieceStarts, count_all

#: The end of a sentence: terminal punctuation, closing quotes or brackets, then spaces.
_SENTENCE_END = re.compile(r"[.!?\u3002\uff01\uff1f][\"')\]\u201d\u2019]*(\s+)")
#: A context label may take at most this share of the budget; longer ones are cut.
CONTEXT_SHARE = 4
#: A summary is left out of a context when fewer word pieces than this are left for it.
MIN_SUMMARY_TOKENS = 8
_ATX_HEADING = re.compile(r" {0,3}#{1,6}[ \t]+([^\n]*?)(?:[ \t]+#+)?[ \t]*(?:\n|$)")


@dataclass(frozen=True, slots=True)
class Span:
    """Characters `a`..`b` of the document: whole lines, or a piece of one line."""

    a: int
    b: int
    tokens: int
    unit: int = -1  # pieces of one subdivided unit share it; only they may overlap
    sticky: bool = False  # a heading: never the last thing in a chunk


@dataclass(frozen=True, slots=True)
class Unit:
    """A block offered to `Layout.pack`: kept whole if it fits, else split (`parts` first,
    taken once, as they come)."""

    span: Span
    parts: Iterable[Span] | None = None


class Lines(Sequence[str]):
    """A text's lines, each cut from the text when asked: an array of line starts (4 bytes
    a line), no object held per line."""

    def __init__(self, text: str) -> None:
        self._text = text
        self.starts = array("i" if len(text) < 2**31 else "q", [0])
        at = text.find("\n")
        while at >= 0:
            self.starts.append(at + 1)
            at = text.find("\n", at + 1)
        self.starts.append(len(text) + 1)
        self._count = len(self.starts) - 1

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: int) -> str:  # type: ignore[override]
        if not 0 <= index < self._count:
            raise IndexError(index)
        return self._text[self.starts[index] : self.starts[index + 1] - 1]


@dataclass(frozen=True, slots=True)
class Draft:
    """A chunk before it becomes a `Chunk`: its offsets and labels."""

    a: int
    b: int
    overlap: int = 0
    context: str = ""
    heading: str = ""
    symbol: str | None = None
    language: str | None = None


def _clean(text: str) -> str:
    """Front matter may hold lone surrogates ("\\ud83d" in YAML): pair or replace them."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").strip()


class Layout:
    """One document's lines and word pieces, and the operations on ranges of it."""

    def __init__(self, text: str, body_start_line: int, budget: Budget) -> None:
        self.text = text
        self.budget = budget
        self.tick = budget.tick  # raises TooSlow past the document's time budget
        self.limit = budget.char_limit
        self.lines = Lines(text)
        self._starts = starts = self.lines.starts
        self.first_line = max(body_start_line, 1)
        self.last_line = len(self.lines)
        meter = budget.meter
        self.exact = bool(getattr(meter, "additive", False)) and hasattr(meter, "starts")
        self._contexts: dict[str, int] = {}
        self._pieces = PieceStarts(0).close()
        self.body_at = (
            starts[self.first_line - 1] if self.first_line <= self.last_line else len(text)
        )
        if self.exact:
            self._pieces = meter.starts(text, self.body_at)  # type: ignore[attr-defined]
            return
        sums = array(starts.typecode, [0]) * (self.first_line)
        lines = ((starts[n - 1], starts[n] - 1) for n in range(self.first_line, len(starts)))
        for span in self._measured(lines):
            sums.append(sums[-1] + span.tokens)
        self._line_sums = sums

    # -- positions -----------------------------------------------------------------------

    def line_start(self, number: int) -> int:
        return self._starts[number - 1]

    def line_end(self, number: int) -> int:
        return self._starts[number] - 1

    def line_of(self, offset: int) -> int:
        """The 1-based line holding character `offset`."""
        return bisect.bisect_right(self._starts, offset)

    def blank(self, number: int) -> bool:
        return not self.text[self._starts[number - 1] : self._starts[number] - 1].strip()

    # -- measuring -----------------------------------------------------------------------

    def tokens(self, a: int, b: int) -> int:
        """Word pieces of `text[a:b]`; `a` and `b` must sit at whitespace or line ends."""
        if self.exact:
            return self._pieces.rank(b) - self._pieces.rank(a)
        first, last = self.line_of(a), self.line_of(b - 1)
        if a == self.line_start(first) and b == self.line_end(last):
            return self._line_sums[last] - self._line_sums[first - 1]
        return self.budget.meter.count(self.text[a:b])

    def fits(self, tokens: int, a: int, b: int, room: int) -> bool:
        return tokens <= room and b - a <= self.limit

    def excerpt(self, a: int, b: int) -> bool:
        """True when `text[a:b]` is whole lines or lies within one line (a chunk's shape)."""
        first, last = self.line_of(a), self.line_of(b - 1)
        return first == last or (a == self.line_start(first) and b == self.line_end(last))

    def label(self, heading: str, summary: str = "") -> tuple[str, str]:
        """(context, heading) for a heading path, cut to a quarter of the budget.

        `summary` (a page's front-matter description, on its first chunk) follows the path
        on a line of its own, in what is left of that quarter (cut at a word piece, or left
        out when under `MIN_SUMMARY_TOKENS` are left): "Guide > Install\\nHow to...\\n\\n".
        """
        heading = _clean(heading)
        share = self.budget.max_tokens // CONTEXT_SHARE
        if heading and (len(heading) > share * 4 or self.context_tokens(heading) > share):
            meter = self.budget.meter
            heading = heading[: self.limit // CONTEXT_SHARE]
            heading = heading[: meter.cut(heading, max(share - 2, 1))].rstrip() + " …"
        summary = " ".join(_clean(summary).split())
        if summary:
            lead = f"{heading}\n" if heading else ""
            room = share - (self.context_tokens(lead) if lead else 0) - 1
            if self.context_tokens(summary) > room or len(summary) > room * 4:
                summary = summary[: self.limit // CONTEXT_SHARE]
                cut = self.budget.meter.cut(summary, room - 2) if room - 2 > 0 else 0
                summary = summary[:cut].rstrip() + " …" if room >= MIN_SUMMARY_TOKENS else ""
        label = "\n".join(part for part in (heading, summary) if part)
        return (f"{label}\n\n" if label else ""), heading

    def context_tokens(self, context: str) -> int:
        if context not in self._contexts:
            self._contexts[context] = self.budget.meter.count(context) if context else 0
        return self._contexts[context]

    def room(self, context: str) -> int:
        return self.budget.max_tokens - self.context_tokens(context)

    # -- spans ---------------------------------------------------------------------------

    def lines_span(self, first: int, last: int, sticky: bool = False) -> Span | None:
        """Lines `first`..`last` without blank lines at either end (None if all blank)."""
        while first <= last and self.blank(first):
            first += 1
        while last >= first and self.blank(last):
            last -= 1
        if first > last:
            return None
        a, b = self.line_start(first), self.line_end(last)
        return Span(a, b, self.tokens(a, b), sticky=sticky)

    def paragraphs(self, first: int, last: int) -> Iterator[Span]:
        """Blank-line separated runs of lines among `first`..`last`, as they are found."""
        start: int | None = None
        for number in range(first, last + 1):
            self.tick()
            if not self.blank(number):
                if start is None:
                    start = number
            elif start is not None:
                yield self._whole(start, number - 1)
                start = None
        if start is not None:
            yield self._whole(start, last)

    def _whole(self, first: int, last: int) -> Span:
        a, b = self.line_start(first), self.line_end(last)
        return Span(a, b, self.tokens(a, b))

    # -- splitting -----------------------------------------------------------------------

    def subdivide(self, span: Span, room: int) -> Iterator[Span]:
        """Pieces of `span` that each fit `room` (paragraphs, lines, sentences, cuts), lazily."""
        self.tick()
        if self.fits(span.tokens, span.a, span.b, room):
            yield span
            return
        first, last = self.line_of(span.a), self.line_of(span.b - 1)
        if first != last:
            groups: Iterator[Span] = self.paragraphs(first, last)
            if len(few := list(islice(groups, 2))) < 2:
                groups = (self._whole(n, n) for n in range(first, last + 1) if not self.blank(n))
            else:
                groups = chain(few, groups)
        else:
            groups = self._measured(self._sentences(span.a, span.b))
            if len(few := list(islice(groups, 2))) < 2:
                yield from self._cut(span.a, span.b, room)
                return
            groups = chain(few, groups)
        for group in groups:
            yield from self.subdivide(group, room)

    def _sentences(self, a: int, b: int) -> Iterator[tuple[int, int]]:
        """The (start, end) of each sentence of `text[a:b]` (one line), as found."""
        position = a
        for match in _SENTENCE_END.finditer(self.text, a, b):
            if match.start(1) > position:
                yield position, match.start(1)
            position = match.end(1)
        end = b
        while end > position and self.text[end - 1].isspace():
            end -= 1
        if end > position:
            yield position, end

    def _measured(self, bounds: Iterable[tuple[int, int]]) -> Iterator[Span]:
        """A span of each `(a, b)`, measured 512 at a time (a blank text counts 0)."""
        bounds = iter(bounds)
        while batch := list(islice(bounds, 512)):
            if self.exact:
                counts = [self.tokens(a, b) for a, b in batch]
            else:
                texts = [self.text[a:b] for a, b in batch]
                counts = count_all(self.budget.meter, [t if t.strip() else "" for t in texts])
            yield from (Span(a, b, n) for (a, b), n in zip(batch, counts, strict=True))

    def _cut(self, a: int, b: int, room: int, context: str | None = None) -> Iterator[Span]:
        """Cut `text[a:b]` (one line) into pieces within `room` and the character limit.

        With `context`, each piece is checked as `context + piece` against the whole budget
        (for meters whose counts do not add up).
        """
        meter, text = self.budget.meter, self.text
        room = max(room, 1)
        most = room if context is None else self.budget.max_tokens
        prefix = context or ""
        position = a
        while position < b:
            self.tick()
            while position < b and text[position].isspace():
                position += 1
            if position >= b:
                break
            end = self._cut_end(position, b, room)
            if end < b and text[end] not in JOINS:
                space = max(text.rfind(" ", position, end), text.rfind("\t", position, end))
                if space > position + (end - position) // 2:
                    end = space
            clean = (position == a or text[position - 1] in JOINS) and (
                end == b or text[end] in JOINS
            )
            if self.exact and context is None and clean:
                count = self.tokens(position, end)  # whitespace on both sides: counts add up
            else:
                count = meter.count(prefix + text[position:end])
            target = room
            while count > most and end - position > 1:
                target = max(1, target - max(1, (count - most)))
                shorter = position + meter.cut(text[position:end], target)
                end = shorter if position < shorter < end else end - 1
                count = meter.count(prefix + text[position:end])
            while end > position + 1 and text[end - 1].isspace():
                end -= 1
            yield Span(position, end, count)
            position = end

    def _cut_end(self, position: int, b: int, room: int) -> int:
        """Where a piece starting at `position` that holds about `room` word pieces ends."""
        if self.exact:
            pieces = self._pieces
            following = pieces.rank(position) + room
            end = pieces.select(following) if following < len(pieces) else b
            end = min(end, b)
            return max(min(end, position + self.limit), position + 1)
        meter, text = self.budget.meter, self.text
        size = min(self.limit, max(room * 8, 64))
        while True:  # a window a few times the room, grown only while it holds too little
            window_end = min(b, position + size)
            end = position + meter.cut(text[position:window_end], room)
            if end < window_end or window_end == b or size >= self.limit:
                return min(max(end, position + 1), window_end)
            size = min(self.limit, size * 2)

    # -- packing -------------------------------------------------------------------------

    def pack(
        self, units: Iterable[Unit], room: int, total: int | None = None
    ) -> list[tuple[int, int, int]]:
        """Fill chunks greedily with `units` (taken as they come, when their `total` word
        pieces are given); (a, b, overlap) of each chunk, in order."""
        if total is None:
            units = list(units)
            total = sum(u.span.tokens for u in units)
        needed = max(1, -(-total // max(room, 1)))
        filler = Filler(self, room, target=-(-total // needed))
        for index, unit in enumerate(units):
            self.tick()
            span = unit.span
            if filler.joinable(span):
                filler.add(span)
                continue
            filler.release_headings()
            if filler.joinable(span):
                filler.add(span)
                continue
            alone = self.fits(span.tokens, span.a, span.b, room)
            headings = filler.heading_tokens()
            if headings is not None and room - headings < room // 2:
                filler.close()
                headings = None
            if alone and headings is None:
                filler.close()
                filler.add(span)
                continue
            sub_room = room if headings is None else room - headings
            for piece in self._split_unit(unit, sub_room, index):
                if filler.joinable(piece):
                    filler.add(piece)
                    continue
                done = filler.close()
                carry = filler.carry(done, piece)
                for span_ in carry:
                    filler.add(span_)
                filler.overlap = done[-1].b - carry[0].a if carry else 0
                filler.add(piece)
        filler.close()
        return filler.out

    def _split_unit(self, unit: Unit, room: int, index: int) -> Iterable[Span]:
        for part in (unit.span,) if unit.parts is None else unit.parts:
            for piece in self.subdivide(part, room):
                yield Span(piece.a, piece.b, piece.tokens, index, piece.sticky)

    def pack_drafts(
        self,
        units: Iterable[Unit],
        context: str = "",
        heading: str = "",
        symbol: str | None = None,
        language: str | None = None,
        total: int | None = None,
    ) -> list[Draft]:
        room = self.room(context)
        return [
            Draft(a, b, overlap, context, heading, symbol, language)
            for a, b, overlap in self.pack(units, room, total)
        ]

    # -- finishing -----------------------------------------------------------------------

    def finish(self, drafts: Sequence[Draft]) -> list[Chunk]:
        """`Chunk`s of the drafts; with a non-additive meter, re-split any over budget."""
        checked: list[Draft] = list(drafts)
        if not self.exact and checked:
            meter = self.budget.meter
            counts = count_all(meter, [d.context + self.text[d.a : d.b] for d in checked])
            fixed: list[Draft] = []
            for draft, count in zip(checked, counts, strict=True):
                if draft.overlap and fixed and draft.a < fixed[-1].a:
                    # the chunk before was re-split: its last piece no longer holds the overlap
                    trimmed = self._drop_overlap(draft)
                    if trimmed is None:
                        continue
                    draft, count = trimmed, self.budget.max_tokens + 1
                if count <= self.budget.max_tokens:
                    fixed.append(draft)
                else:
                    fixed.extend(self._refit(draft))
            checked = fixed
        return [
            Chunk(
                text=self.text[d.a : d.b],
                start_line=self.line_of(d.a),
                end_line=self.line_of(d.b - 1),
                heading=d.heading,
                context=self.trim_context(d.context, d.heading, self.text[d.a : d.b]),
                symbol=d.symbol,
                language=d.language,
                overlap=d.overlap,
            )
            for d in checked
        ]

    def trim_context(self, context: str, heading: str, text: str) -> str:
        """`context` less the headings that `text` itself starts with: a section's first
        chunk ("# Guide\n\n## Install ...") would otherwise embed "Guide > Install" twice.
        The path is trimmed from its end while the chunk's leading heading lines, last
        first, match it; a summary line after the path stays. Only ever shortens the
        embedding input: the budget still holds."""
        if not context or not heading or not context.startswith(f"{heading}\n"):
            return context  # no prefix, or not a heading path's
        summary = context[len(heading) + 1 :].strip()  # "" or the summary, as cut to fit
        leading: list[str] = []
        at = 0
        while (match := _ATX_HEADING.match(text, at)) is not None:
            leading.append(match.group(1).strip())
            at = match.end()
            while text.startswith("\n", at):
                at += 1
        path = heading.split(" > ")
        trimmed = False
        while leading and path and leading[-1] == path[-1]:
            leading.pop()
            path.pop()
            trimmed = True
        return self.label(" > ".join(path), summary)[0] if trimmed else context

    def _refit(self, draft: Draft) -> list[Draft]:
        """Halve an over-budget draft at a line boundary (or cut its one line) until it fits."""
        self.tick()
        meter, max_tokens = self.budget.meter, self.budget.max_tokens
        if meter.count(draft.context + self.text[draft.a : draft.b]) <= max_tokens:
            return [draft]
        if draft.overlap:  # the repeated text is in the chunk before: re-split the rest only
            trimmed = self._drop_overlap(draft)
            return [] if trimmed is None else self._refit(trimmed)
        first, last = self.line_of(draft.a), self.line_of(draft.b - 1)
        if first == last:
            room = max_tokens - self.context_tokens(draft.context)
            return [
                replace(draft, a=p.a, b=p.b, overlap=draft.overlap if p.a == draft.a else 0)
                for p in self._cut(draft.a, draft.b, room, draft.context)
            ]
        middle = (first + last) // 2
        head_last = middle
        while head_last > first and self.blank(head_last):
            head_last -= 1
        tail_first = middle + 1
        while tail_first < last and self.blank(tail_first):
            tail_first += 1
        halves = [
            replace(draft, b=self.line_end(head_last)),
            replace(draft, a=self.line_start(tail_first), overlap=0),
        ]
        return [piece for half in halves if half.b > half.a for piece in self._refit(half)]

    def _drop_overlap(self, draft: Draft) -> Draft | None:
        """The draft without the text it repeats from the chunk before (None if nothing left)."""
        start = draft.a + draft.overlap
        if start >= len(self.text) or self.text[start] == "\n":
            following = self.line_of(start) + 1
            while following <= self.last_line and self.blank(following):
                following += 1
            start = self.line_start(following) if following <= self.last_line else draft.b
        else:
            while start < draft.b and self.text[start] in " \t":
                start += 1
        return replace(draft, a=start, overlap=0) if start < draft.b else None
