"""Which words of a hit's text the query matched, for marking them in the terminal.

Design notes: docs/internals.md, `retrieve/highlight.py`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .bm25 import STOP_WORDS as _KEYWORD_STOP_WORDS
from .bm25 import query_terms
from .filters import phrase_query

_TOKEN = re.compile(r"[^\W_]+")
#: Words never marked (unless the query has no other word): the keyword index's stop words
#: plus question and function words a natural-language query brings along.
STOP_WORDS = frozenset(
    {
        *_KEYWORD_STOP_WORDS,
        *("i", "me", "my", "we", "our", "you", "your", "he", "she", "him", "her", "his", "its"),
        *("them", "do", "does", "did", "done", "doing", "have", "has", "had", "am", "were"),
        *("been", "being", "can", "could", "should", "would", "may", "might", "must", "shall"),
        *("how", "what", "when", "where", "which", "who", "whom", "whose", "why", "so", "than"),
        *("too", "very", "just", "from", "about", "up", "out", "any", "all", "some", "get"),
        *("those", "here", "also", "only", "own", "same", "s", "t"),
    }
)
_SUFFIXES = ("ations", "ation", "ings", "ing", "edly", "ies", "ied", "ed", "es", "ly", "s")


def stem(word: str) -> str:
    """A crude, stable stem: lower case, one common English suffix removed."""
    lowered = word.casefold()
    for suffix in _SUFFIXES:
        if lowered.endswith(suffix) and len(lowered) - len(suffix) >= 3:
            return lowered[: -len(suffix)]
    return lowered


def match_spans(text: str, query: str, phrases: Sequence[str] = ()) -> list[tuple[int, int]]:
    """Sorted, non-overlapping (start, end) spans of `text` matching the query or a phrase."""
    words = query_terms(query)
    stems = {stem(t) for t in ([w for w in words if w not in STOP_WORDS] or words)}
    spans = [(m.start(), m.end()) for m in _TOKEN.finditer(text) if stem(m.group()) in stems]
    for phrase in phrases:
        _, pattern = phrase_query(phrase)
        spans += [(m.start(), m.end()) for m in re.finditer(pattern, text, re.IGNORECASE)]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def matched_pages(
    text: str,
    start_line: int,
    page: int,
    page_starts: Sequence[str],
    query: str,
    phrases: Sequence[str] = (),
) -> tuple[int, ...]:
    """The pages of the lines of a document's chunk that match the query best: the lines
    holding the most matched words, each mapped to its page (`page`: the chunk's first
    page; `page_starts`: `LINE:PAGE` of each later page, as stored at ingest). () when
    nothing matches (the chunk's own pages are cited then)."""
    spans = match_spans(text, query, phrases)
    if not spans:
        return ()
    per_line: dict[int, int] = {}
    line, at = start_line, 0
    for start, _ in spans:  # spans are sorted: count newlines once, left to right
        line += text.count("\n", at, start)
        at = start
        per_line[line] = per_line.get(line, 0) + 1
    best = max(per_line.values())
    starts: list[tuple[int, int]] = []
    for item in page_starts:
        where, _, which = str(item).partition(":")
        if where.isdigit() and which.isdigit():
            starts.append((int(where), int(which)))
    starts.sort()
    pages = set()
    for matched_line, count in per_line.items():
        if count == best:
            found = page
            for first_line, number in starts:
                if first_line > matched_line:
                    break
                found = number
            pages.add(found)
    return tuple(sorted(pages))


def snippet(
    text: str, spans: Sequence[tuple[int, int]], width: int = 240
) -> tuple[str, list[tuple[int, int]]]:
    """A window of about `width` characters around the first match, spans shifted into it."""
    flat = text
    start = 0
    if spans and spans[0][0] > width // 3:
        start = spans[0][0] - width // 3
        space = flat.rfind(" ", 0, start)
        start = space + 1 if space >= 0 and start - space < 30 else start
    end = min(len(flat), start + width)
    inside = [
        (max(a, start) - start, min(b, end) - start) for a, b in spans if b > start and a < end
    ]
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(flat) else ""
    shift = len(prefix)
    return prefix + flat[start:end] + suffix, [(a + shift, b + shift) for a, b in inside]


__all__ = ["STOP_WORDS", "match_spans", "snippet", "stem"]
