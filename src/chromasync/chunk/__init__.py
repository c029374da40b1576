"""Chunking: turn a `Document` into `Chunk`s that fit the embedding model's budget.

Pure functions of their input: no clock, no disk, no environment. The invariants every
chunker keeps (and `tests/unit/test_chunk_properties.py` checks):

* each chunk's `embed_text` (context prefix + text) measures at most `budget.max_tokens`
  word pieces with `budget.meter`, and its text at most `budget.char_limit` characters;
* `text` is an exact excerpt of the normalised document: whole lines joined by "\\n", or
  a piece of one long line, or headings (a glued lead, in code) followed by the first piece
  of a long line; `start_line`/`end_line` (1-based, inclusive) are the lines it starts and
  ends on;
* chunks come in document order and together hold every non-blank character of the body
  (front matter is never chunk text, except for a Markdown page that has no body at all,
  a section index: its `title` and `description` lines are its one chunk, see
  `markdown.front_matter_chunks`); two chunks share text only where the later one
  declares it in `overlap` (its first `overlap` characters repeat the end of the one
  before), which happens only inside a single unit (a paragraph, list, code block or
  declaration) that had to be subdivided;
* the context prefix is derived from the document's content only (heading path, front
  matter title, code symbol), never from its path or source, so that moving a file
  re-embeds nothing;
* the same input gives the same chunks;
* every chunker runs in linear (or n log n) time in its input
  (`tests/unit/test_chunk_complexity.py` doubles inputs and bounds the time ratio), and
  a `Deadline` in the budget, checked in the chunkers' loops, stops a file that still runs
  past its time budget with `TooSlow` (ingest counts it as a `too-slow` skip).

Markdown, and documents rendered as Markdown (`corpus.documents`), are chunked by heading
sections (`markdown.py`), code by tree-sitter declarations
(`code.py`), everything else by paragraphs (`text.py`); `layout.py` holds the measuring,
splitting and packing they share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..plugins import Registry
from ..records import Chunk, Document
from .meter import TokenMeter

#: Unless a budget says otherwise, a chunk holds at most this many characters per token of
#: budget: a bound on stored text where word pieces are huge (a 1 MiB word is one [UNK]).
CHARS_PER_TOKEN = 20


class TooSlow(Exception):
    """Chunking one document ran past its time budget."""


class Deadline:
    """A time budget for one document, on an injected clock (seconds, monotonic).

    `check` is cheap: it reads the clock on its first call, then once every `every` calls.
    """

    __slots__ = ("_clock", "_end", "_left", "every", "seconds")

    def __init__(self, seconds: float, clock: Callable[[], float], every: int = 64) -> None:
        self.seconds = seconds
        self.every = max(every, 1)
        self._clock = clock
        self._end = clock() + seconds
        self._left = 1

    def check(self) -> None:
        self._left -= 1
        if self._left > 0:
            return
        self._left = self.every
        if self._clock() > self._end:
            raise TooSlow(f"reading and chunking took longer than {self.seconds:g} s")


@dataclass(frozen=True, slots=True)
class Budget:
    """Every chunk's `embed_text` must measure at most `max_tokens` word pieces."""

    max_tokens: int
    meter: TokenMeter
    max_chars: int = 0  # 0: max_tokens * CHARS_PER_TOKEN
    deadline: Deadline | None = None  # None: no time budget

    def tick(self) -> None:
        """Raise `TooSlow` once the deadline has passed (checked in the chunkers' loops)."""
        if self.deadline is not None:
            self.deadline.check()

    @property
    def char_limit(self) -> int:
        return self.max_chars or self.max_tokens * CHARS_PER_TOKEN


#: A chunker: one document to chunks within the budget, keeping the invariants above.
Chunker = Callable[[Document, Budget], list[Chunk]]


def _markdown(doc: Document, budget: Budget) -> list[Chunk]:
    from .markdown import chunk_markdown

    return chunk_markdown(doc, budget)


def _code(doc: Document, budget: Budget) -> list[Chunk]:
    from .code import chunk_code

    return chunk_code(doc, budget)


def _text(doc: Document, budget: Budget) -> list[Chunk]:
    from .text import chunk_text

    return chunk_text(doc, budget)


#: Chunkers by document kind (`plugins.Registry`; entry point group `chromasync.chunkers`).
#: A kind no chunker is registered for is chunked as text.
CHUNKERS: Registry[Chunker] = Registry(
    "chunker",
    "chromasync.chunkers",
    {"markdown": _markdown, "document": _markdown, "code": _code, "text": _text},
)


def chunk_document(doc: Document, budget: Budget) -> list[Chunk]:
    """Split one document by its kind's chunker (`CHUNKERS`): Markdown sections, code
    declarations, or text.

    Raises `TooSlow` when `budget.deadline` passes before the chunks are done.
    """
    budget.tick()
    return (CHUNKERS.find(doc.kind) or _text)(doc, budget)


__all__ = [
    "CHARS_PER_TOKEN",
    "CHUNKERS",
    "Budget",
    "Chunker",
    "Deadline",
    "TooSlow",
    "chunk_document",
]
