"""The chunk being filled by `Layout.pack`: which span may join it, when it closes, and what
the next chunk repeats of it (`carry`: overlap, only between pieces of one unit).

Design notes: docs/internals.md, `chunk/filler.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .meter import JOINS

#: Overlap between pieces of one subdivided unit: at most this share of the budget.
OVERLAP_SHARE = 8

if TYPE_CHECKING:
    from .layout import Layout, Span


class Filler:
    """The chunk being filled by `Layout.pack`, and the chunks closed so far."""

    def __init__(self, layout: Layout, room: int, target: int) -> None:
        self.layout = layout
        self.room = room
        self.target = target  # a chunk this full is closed: chunks come out even
        self.out: list[tuple[int, int, int]] = []
        self.cur: list[Span] = []
        self.used = 0
        self.overlap = 0

    def joinable(self, span: Span) -> bool:
        layout = self.layout
        if not self.cur:
            return layout.fits(span.tokens, span.a, span.b, self.room)
        if self.used >= self.target and self.heading_tokens() is None:
            return False
        return (
            self.used + span.tokens <= self.room
            and span.b - self.cur[0].a <= layout.limit
            and layout.text[self.cur[-1].b] in JOINS
            and (layout.excerpt(self.cur[0].a, span.b) or self._opens_a_line(span))
        )

    def _opens_a_line(self, span: Span) -> bool:
        """A chunk holding only headings may take the first piece of a long line after
        them: else the heading would be a chunk of its own."""
        layout = self.layout
        return self.heading_tokens() is not None and span.a == layout.line_start(
            layout.line_of(span.a)
        )

    def add(self, span: Span) -> None:
        self.cur.append(span)
        self.used += span.tokens

    def heading_tokens(self) -> int | None:
        """The size of the chunk being filled if it holds only headings, else None."""
        if self.cur and all(s.sticky for s in self.cur):
            return self.used
        return None

    def close(self) -> list[Span]:
        done = self.cur
        if done:
            self.out.append((done[0].a, done[-1].b, self.overlap))
        self.cur, self.used, self.overlap = [], 0, 0
        return done

    def release_headings(self) -> None:
        """Close the chunk without its trailing headings, which start the next one."""
        cur = self.cur
        if not cur or not cur[-1].sticky or all(s.sticky for s in cur):
            return
        keep = max(i for i, s in enumerate(cur) if not s.sticky) + 1
        self.cur = cur[:keep]
        self.used = sum(s.tokens for s in self.cur)
        self.close()
        for span in cur[keep:]:
            self.add(span)

    def carry(self, done: list[Span], piece: Span) -> list[Span]:
        """The tail of the chunk just closed that the next one repeats (same unit only)."""
        if piece.unit < 0:
            return []
        layout = self.layout
        most = layout.budget.max_tokens // OVERLAP_SHARE
        carry: list[Span] = []
        total = 0
        for span in reversed(done[1:]):
            if span.unit != piece.unit or span.sticky:
                break
            if total + span.tokens > most or total + span.tokens + piece.tokens > self.room:
                break
            if piece.b - span.a > layout.limit:
                break
            carry.insert(0, span)
            total += span.tokens
        if carry and (
            layout.text[carry[-1].b] not in JOINS or not layout.excerpt(carry[0].a, piece.b)
        ):
            return []
        return carry
