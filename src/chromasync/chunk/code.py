"""Source code: generic splitting for now (tree-sitter declarations come next)."""

from __future__ import annotations

from ..records import Chunk, Document
from . import Budget
from .text import chunk_lines


def chunk_code(doc: Document, budget: Budget) -> list[Chunk]:
    lines = doc.text.split("\n")
    return chunk_lines(lines, doc.body_start_line, len(lines), "", "", budget, doc.language)
