"""Chunking: turn a `Document` into `Chunk`s that fit the embedding model's budget.

Pure functions of their input: no clock, no disk, no environment. Each chunk's text is an
exact excerpt of the normalised document and its `context` prefix is derived from the
document's content only (never its path), so moving a file re-embeds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records import Chunk, Document
from .tokens import TokenMeter


@dataclass(frozen=True, slots=True)
class Budget:
    """Every chunk's `embed_text` must measure at most `max_tokens` word pieces."""

    max_tokens: int
    meter: TokenMeter


def chunk_document(doc: Document, budget: Budget) -> list[Chunk]:
    """Split one document by its kind: Markdown sections, code declarations, or text."""
    if doc.kind == "markdown":
        from .markdown import chunk_markdown

        return chunk_markdown(doc, budget)
    if doc.kind == "code":
        from .code import chunk_code

        return chunk_code(doc, budget)
    from .text import chunk_text

    return chunk_text(doc, budget)


__all__ = ["Budget", "chunk_document"]
