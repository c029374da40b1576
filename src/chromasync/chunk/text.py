"""Plain text, and the fallback for code that cannot be parsed: paragraphs packed to budget.

Blank-line separated paragraphs are the units; one that does not fit is split into lines,
then sentences, then cuts at word-piece boundaries (see `layout.py`). There is no context
prefix: plain text has no structure to name.
"""

from __future__ import annotations

from ..records import Chunk, Document
from . import Budget
from .layout import Draft, Layout, Unit


def paragraph_drafts(layout: Layout, language: str | None = None) -> list[Draft]:
    """Drafts of the body of `layout`'s document, packed by paragraph."""
    body = layout.lines_span(layout.first_line, layout.last_line)
    units = (Unit(s) for s in layout.paragraphs(layout.first_line, layout.last_line))
    return layout.pack_drafts(units, language=language, total=body.tokens if body else 0)


def chunk_text(doc: Document, budget: Budget) -> list[Chunk]:
    """Plain text: paragraphs packed up to the budget, no context prefix."""
    layout = Layout(doc.text, doc.body_start_line, budget)
    return layout.finish(paragraph_drafts(layout, doc.language))
