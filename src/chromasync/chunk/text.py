"""Generic splitting: paragraphs packed up to the budget, then lines, then inside a line.

The helpers here are shared by the Markdown and code chunkers: a `Block` is a run of whole
lines (or a piece of one long line) and `pack_blocks` merges neighbours greedily while the
context prefix plus the excerpt stays within the budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records import Chunk, Document
from . import Budget


@dataclass(frozen=True, slots=True)
class Block:
    """Lines `start`..`end` (1-based, inclusive) of the document, or a piece of one line."""

    start: int
    end: int
    text: str
    whole_lines: bool = True


def paragraph_blocks(lines: list[str], first: int, last: int) -> list[Block]:
    """Blank-line separated paragraphs among lines `first`..`last` (1-based)."""
    blocks: list[Block] = []
    start: int | None = None
    for number in range(first, last + 1):
        if lines[number - 1].strip():
            if start is None:
                start = number
        elif start is not None:
            blocks.append(Block(start, number - 1, "\n".join(lines[start - 1 : number - 1])))
            start = None
    if start is not None:
        blocks.append(Block(start, last, "\n".join(lines[start - 1 : last])))
    return blocks


def fit_block(block: Block, lines: list[str], context: str, budget: Budget) -> list[Block]:
    """Split `block` until each piece fits the budget with `context` in front of it."""
    meter = budget.meter
    if meter.count(context + block.text) <= budget.max_tokens:
        return [block]
    if block.whole_lines and block.end > block.start:
        pieces = [Block(n, n, lines[n - 1]) for n in range(block.start, block.end + 1)]
        fitted: list[Block] = []
        for piece in pieces:
            if piece.text.strip():
                fitted.extend(fit_block(piece, lines, context, budget))
        return pack_lines(fitted, lines, context, budget)
    return split_line(block, context, budget)


def split_line(block: Block, context: str, budget: Budget) -> list[Block]:
    """Cut one over-long line into pieces at token boundaries (preferring spaces)."""
    room = max(budget.max_tokens - budget.meter.count(context), 8)
    text = block.text
    pieces: list[Block] = []
    while text:
        end = budget.meter.cut(text, room)
        while end > 1 and budget.meter.count(context + text[:end]) > budget.max_tokens:
            end = budget.meter.cut(text[:end], room - max(1, room // 8))
            room = max(room - max(1, room // 8), 1)
        piece, text = text[:end], text[end:]
        if piece.strip():
            pieces.append(Block(block.start, block.end, piece, whole_lines=False))
    return pieces


def pack_lines(blocks: list[Block], lines: list[str], context: str, budget: Budget) -> list[Block]:
    """Merge consecutive whole-line blocks while the merged excerpt fits."""
    merged: list[Block] = []
    for block in blocks:
        if merged and merged[-1].whole_lines and block.whole_lines:
            last = merged[-1]
            candidate = "\n".join(lines[last.start - 1 : block.end])
            if budget.meter.count(context + candidate) <= budget.max_tokens:
                merged[-1] = Block(last.start, block.end, candidate)
                continue
        merged.append(block)
    return merged


def blocks_to_chunks(
    blocks: list[Block], context: str, heading: str, language: str | None = None
) -> list[Chunk]:
    return [
        Chunk(
            text=b.text,
            start_line=b.start,
            end_line=b.end,
            heading=heading,
            context=context,
            language=language,
        )
        for b in blocks
        if b.text.strip()
    ]


def chunk_lines(
    lines: list[str],
    first: int,
    last: int,
    context: str,
    heading: str,
    budget: Budget,
    language: str | None = None,
) -> list[Chunk]:
    """Paragraphs of lines `first`..`last`, each fitted, then packed up to the budget."""
    fitted: list[Block] = []
    for block in paragraph_blocks(lines, first, last):
        fitted.extend(fit_block(block, lines, context, budget))
    return blocks_to_chunks(pack_lines(fitted, lines, context, budget), context, heading, language)


def chunk_text(doc: Document, budget: Budget) -> list[Chunk]:
    """Plain text: paragraphs packed up to the budget, no context prefix."""
    lines = doc.text.split("\n")
    return chunk_lines(lines, doc.body_start_line, len(lines), "", "", budget, doc.language)
