"""Chunking: turn a `Document` into `Chunk`s that fit the embedding model's budget.

Pure functions of their input: no clock, no disk, no environment. Each chunk's text is an
exact excerpt of the normalised document and its `context` prefix is derived from the
document's content only (never its path), so moving a file re-embeds nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..records import Chunk, Document
from .tokens import TokenMeter


@dataclass(frozen=True, slots=True)
class Budget:
    """Every chunk's `embed_text` must measure at most `max_tokens` word pieces."""

    max_tokens: int
    meter: TokenMeter


_SUMMARY_KEY = re.compile(r"^[\"']?(title|description)[\"']?\s*:", re.IGNORECASE)


def front_matter_chunk(doc: Document, budget: Budget) -> list[Chunk]:
    """A body-less Markdown page (a section index): its title and description lines.

    The chunk is the exact excerpt of the front matter from the first `title:` or
    `description:` line to the end of the last one (with its continuation lines).
    """
    lines = doc.text.split("\n")
    fence_end = doc.body_start_line - 2  # index of the closing fence
    keys = [i for i in range(1, fence_end) if _SUMMARY_KEY.match(lines[i])]
    if not keys:
        return []
    last = keys[-1]
    while last + 1 < fence_end and lines[last + 1][:1] in (" ", "\t"):
        last += 1
    from .text import Block, fit_block

    title = doc.metadata.get("title")
    heading = title if isinstance(title, str) else ""
    block = Block(keys[0] + 1, last + 1, "\n".join(lines[keys[0] : last + 1]))
    return [
        Chunk(text=b.text, start_line=b.start, end_line=b.end, heading=heading)
        for b in fit_block(block, lines, "", budget)
    ]


def chunk_document(doc: Document, budget: Budget) -> list[Chunk]:
    """Split one document by its kind: Markdown sections, code declarations, or text."""
    if (
        doc.kind == "markdown"
        and not "\n".join(doc.text.split("\n")[doc.body_start_line - 1 :]).strip()
    ):
        return front_matter_chunk(doc, budget)
    if doc.kind == "markdown":
        from .markdown import chunk_markdown

        return chunk_markdown(doc, budget)
    if doc.kind == "code":
        from .code import chunk_code

        return chunk_code(doc, budget)
    from .text import chunk_text

    return chunk_text(doc, budget)


__all__ = ["Budget", "chunk_document"]
