"""The code example an extractive answer shows, from the page that answers best.

Design notes: docs/internals.md, `answer/examples.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from ..chunk.blocks import Block, Prose, Segment, segment
from ..records import Hit
from .terms import terms_of

#: A cited hit's example is shown when it ranks among the first this many.
EXAMPLE_RANKS = 3
#: At most this many chunks of a page are read for its example.
MAX_PAGE_CHUNKS = 200
MAX_TEXT_CHARS = 20_000

#: The other indexed chunks of a hit's page (its document), in line order; [] when unknown.
Page = Callable[[Hit], Sequence[Hit]]


@dataclass(frozen=True, slots=True)
class Example:
    """A code block to show after the sentences of hit rank `follows` (first when that hit
    has none chosen), quoted from `hit`: the ranked hit `rank`, or a chunk read from the
    page (`rank` None), which the answer cites as a source of its own."""

    follows: int
    rank: int | None
    hit: Hit
    block: Block


def find_example(
    question: str,
    ranked: Sequence[tuple[int, Hit]],
    segmented: Mapping[int, Sequence[Segment]],
    cited: Collection[int],
    shows_code: Collection[int],
    page: Page | None = None,
) -> Example | None:
    """The example to show (docs/internals.md), or None: none found, or a chosen
    sentence of the page (`shows_code`: the ranks whose chosen sentences lead into code)
    already shows its code."""
    if not ranked:
        return None
    asked = frozenset(terms_of(question))
    hits = dict(ranked)
    best = ranked[0][0]
    for rank in dict.fromkeys([best, *sorted(r for r in cited if r < EXAMPLE_RANKS)]):
        hit = hits[rank]
        same = [r for r, h in ranked if h.path == hit.path and h.source == hit.source]
        if any(r in shows_code for r in same):
            return None
        found = _retrieved_example(rank, same, hits, segmented, asked)
        if found is None and rank == best and page is not None:
            found = _read_example(rank, hit, {hits[r].id for r in same}, asked, page)
        if found is None:
            continue
        example, words = found
        opens = not any(r in cited for r in same)
        if opens and not asked & (words | _summary_words(hit)):
            return None  # nothing ties the page to the question: no example at all
        return example
    return None


def _retrieved_example(
    rank: int,
    same: Sequence[int],
    hits: Mapping[int, Hit],
    segmented: Mapping[int, Sequence[Segment]],
    asked: frozenset[str],
) -> tuple[Example, frozenset[str]] | None:
    """The example of hit `rank`, else of the first of its page's other hits that has one."""
    for other in sorted(same, key=lambda r: (r != rank, r)):
        titled = None if other == rank else frozenset(terms_of(hits[other].heading))
        found = code_example(segmented[other], asked, titled)
        if found is not None:
            return Example(rank, other, hits[other], found[0]), found[1]
    return None


def _read_example(
    rank: int, hit: Hit, seen: set[str], asked: frozenset[str], page: Page
) -> tuple[Example, frozenset[str]] | None:
    """The example of the first of the page's other chunks (line order) that holds one."""
    for chunk in list(page(hit))[:MAX_PAGE_CHUNKS]:
        if chunk.id in seen:
            continue
        titled = frozenset(terms_of(chunk.heading))
        found = code_example(segment(chunk.text[:MAX_TEXT_CHARS]), asked, titled)
        if found is not None:
            block, words = found
            return Example(rank, None, chunk, block), words
    return None


def _summary_words(hit: Hit) -> frozenset[str]:
    """The words a page says it is about: its heading path and front-matter description."""
    description = hit.metadata.get("description")
    text = f"{hit.heading} {description if isinstance(description, str) else ''}"
    return frozenset(terms_of(text))


def code_example(
    segments: Sequence[Segment], asked: frozenset[str], titled: frozenset[str] | None = None
) -> tuple[Block, frozenset[str]] | None:
    """The chunk's example and its words (its own and its lead-in sentence's): the code
    block that best shares the question's words (`asked`), among those that are examples;
    None when it has none. `titled` None: the chunk the question matched (before any prose,
    led into by a colon, or sharing a word with the question); else the words of another
    chunk's heading path (sharing a word with the question or with them)."""
    best: tuple[Block, frozenset[str]] | None = None
    best_shared = -1
    prose_seen = False
    for index, part in enumerate(segments):
        if isinstance(part, Prose):
            prose_seen = True
            continue
        if part.kind != "code":
            continue
        own = words = frozenset(terms_of(part.text))
        lead = segments[index - 1] if index else None
        led = isinstance(lead, Prose) and lead.text.rstrip().endswith(":")
        if led and isinstance(lead, Prose):
            words |= frozenset(terms_of(lead.text))
        shared = len(asked & words)
        if titled is None:
            wanted = bool(shared) or led or not prose_seen
        else:
            wanted = bool(shared) or bool(own & titled)
        if wanted and shared > best_shared:
            best, best_shared = (part, words), shared
    return best


__all__ = ["EXAMPLE_RANKS", "MAX_PAGE_CHUNKS", "Example", "Page", "code_example", "find_example"]
