"""Citation checks on a model's answer: `[n]` markers against the sources it was given.

Design notes: docs/internals.md, `answer/verify.py`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..records import Hit
from .records import (
    FLAG_EMPTY,
    FLAG_NO_CITATIONS,
    FLAG_REMOVED_CITATIONS,
    Citation,
    citation_for,
)

#: A marker: up to 20 numbers of up to 4 digits (longer runs are not citations).
MARKER = re.compile(r"[ \t]?\[(\d{1,4}(?:\s*,\s*\d{1,4}){0,19})\]")


@dataclass(frozen=True, slots=True)
class Checked:
    """The answer text with valid, renumbered markers and the citations they index."""

    text: str
    citations: tuple[Citation, ...]
    removed: int
    flags: tuple[str, ...]


def check_citations(
    text: str,
    sources: Sequence[Hit],
    quote_of: Callable[[Hit], str] | None = None,
) -> Checked:
    """Keep the markers that name one of `sources` (1-based), renumbered by first use."""
    renumber: dict[int, int] = {}
    removed = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal removed
        kept: list[int] = []
        for x in (int(v) for v in match.group(1).split(",")):
            if not 1 <= x <= len(sources):
                removed += 1
                continue
            new = renumber.setdefault(x, len(renumber) + 1)
            if new not in kept:
                kept.append(new)
        if not kept:
            return ""
        lead = match.group(0)[0] if match.group(0)[0] in " \t" else ""
        return f"{lead}[{', '.join(str(k) for k in kept)}]"

    cleaned = MARKER.sub(replace, text).strip()
    citations = tuple(
        citation_for(new, sources[old - 1], quote_of(sources[old - 1]) if quote_of else "")
        for old, new in sorted(renumber.items(), key=lambda item: item[1])
    )
    flags: list[str] = []
    if not cleaned:
        flags.append(FLAG_EMPTY)
    elif not citations:
        flags.append(FLAG_NO_CITATIONS)
    if removed:
        flags.append(FLAG_REMOVED_CITATIONS)
    return Checked(cleaned, citations, removed, tuple(flags))


__all__ = ["MARKER", "Checked", "check_citations"]
