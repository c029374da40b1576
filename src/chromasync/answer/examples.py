"""The code example an extractive answer shows, from the page that answers best.

Documentation answers "how do I ..." with an example as often as with prose, and a
reference page may hold little else ("Returns the square root of the given number." in its
front matter, then `{{ math.Sqrt 81 }} → 9`). So when no chosen sentence of the best page
leads into code, `find_example` looks for that page's example:

1. The page is the best hit's (the first of the ranked hits). Its chunks are searched in
   this order: the hit itself, then the page's other retrieved chunks (best first), then,
   when none holds an example and the caller can read the page (`Page`), the page's other
   indexed chunks in line order (at most `MAX_PAGE_CHUNKS`, each within
   `MAX_TEXT_CHARS`). Then each cited hit among the first `EXAMPLE_RANKS`, in rank order,
   as in 1 but without reading its page.
2. A chunk's code blocks are examples when they come before any prose in the chunk (a
   reference page's example often comes first), are led into by a sentence ending in a
   colon ("For example:"), or share a word with the question; code after prose that shares
   none (an install command above a sentence about Snap) is not one.
3. Of a chunk's examples, the one sharing the most words with the question (its own and
   its lead-in sentence's) is shown; on a tie, the first.

Linear in the text searched: each chunk is segmented once by the caller (`segmented`), the
read chunks once here.
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
    """The example to show (see the module's docstring), or None: none found, or a chosen
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
        for other in sorted(same, key=lambda r: (r != rank, r)):
            block = code_example(segmented[other], asked)
            if block is not None:
                return Example(rank, other, hits[other], block)
        if rank == best and page is not None:
            found = _read_example(hit, {hits[r].id for r in same}, asked, page)
            if found is not None:
                return Example(rank, None, *found)
    return None


def _read_example(
    hit: Hit, seen: set[str], asked: frozenset[str], page: Page
) -> tuple[Hit, Block] | None:
    """The example of the first of the page's other chunks (line order) that holds one."""
    for chunk in list(page(hit))[:MAX_PAGE_CHUNKS]:
        if chunk.id in seen:
            continue
        block = code_example(segment(chunk.text[:MAX_TEXT_CHARS]), asked)
        if block is not None:
            return chunk, block
    return None


def code_example(segments: Sequence[Segment], asked: frozenset[str]) -> Block | None:
    """The chunk's example: its code block that best shares the question's words (`asked`),
    among those that are examples (before any prose, led into by a colon, or sharing a word
    with the question); None when it has none."""
    best: Block | None = None
    best_shared = -1
    prose_seen = False
    for index, part in enumerate(segments):
        if isinstance(part, Prose):
            prose_seen = True
            continue
        if part.kind != "code":
            continue
        words = frozenset(terms_of(part.text))
        lead = segments[index - 1] if index else None
        led = isinstance(lead, Prose) and lead.text.rstrip().endswith(":")
        if led and isinstance(lead, Prose):
            words |= frozenset(terms_of(lead.text))
        shared = len(asked & words)
        if not (shared or led or not prose_seen):
            continue
        if shared > best_shared:
            best, best_shared = part, shared
    return best


__all__ = ["EXAMPLE_RANKS", "MAX_PAGE_CHUNKS", "Example", "Page", "code_example", "find_example"]
