"""Markdown: one chunk per heading section, the heading path embedded as context."""

from __future__ import annotations

import re

from ..records import Chunk, Document
from . import Budget
from .text import chunk_lines

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def find_headings(lines: list[str], first: int) -> list[tuple[int, int, str]]:
    """(line number, level, title) of each ATX heading outside fenced code blocks."""
    headings: list[tuple[int, int, str]] = []
    fence: str | None = None
    for number in range(first, len(lines) + 1):
        line = lines[number - 1]
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        if opened:
            fence = opened.group(1)
            continue
        match = _ATX.match(line)
        if match:
            headings.append((number, len(match.group(1)), match.group(2).strip()))
    return headings


def chunk_markdown(doc: Document, budget: Budget) -> list[Chunk]:
    lines = doc.text.split("\n")
    headings = find_headings(lines, doc.body_start_line)
    title = doc.metadata.get("title")
    root = [str(title)] if isinstance(title, str) and title.strip() else []
    bounds: list[tuple[int, int, list[str]]] = []
    first_heading = headings[0][0] if headings else len(lines) + 1
    if first_heading > doc.body_start_line:
        bounds.append((doc.body_start_line, first_heading - 1, root))
    stack: list[tuple[int, str]] = []
    for index, (number, level, text) in enumerate(headings):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text))
        end = headings[index + 1][0] - 1 if index + 1 < len(headings) else len(lines)
        path = [t for _, t in stack]
        if root and path and path[0] != root[0] and level > 1:
            path = root + path
        bounds.append((number, end, path))
    chunks: list[Chunk] = []
    for first, last, path in bounds:
        heading = " > ".join(path)
        context = f"{heading}\n\n" if heading else ""
        chunks.extend(chunk_lines(lines, first, last, context, heading, budget))
    return chunks
