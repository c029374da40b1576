"""The records of a paged document, and the text hygiene every reader shares.

`documents` reads a file into these; `pdf`, `docx`, `slides` and `markup` are its readers.
Kept apart so that the readers and `documents` import this module, never each other.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Limits:
    """Budgets for reading one file; exceeding any of them is a `too-large` skip."""

    max_bytes: int = 200 * 1024 * 1024  # the file itself
    max_pages: int = 2000  # PDF pages, PPTX slides
    max_chars: int = 5_000_000  # extracted text, all pages together
    max_zip_members: int = 10_000  # DOCX / PPTX parts
    max_uncompressed: int = 256 * 1024 * 1024  # declared size of all zip members
    max_inflated: int = 512 * 1024 * 1024  # bytes inflated while reading (zip, PDF streams)
    max_stream: int = 32 * 1024 * 1024  # one PDF stream inflated (each filter's output)
    max_image: int = 256 * 1024 * 1024  # one PDF stream labelled an image, inflated
    max_page_chars: int = 500_000  # characters one PDF stream shows (PDFium's text page)
    max_page_ops: int = 500_000  # operators of one PDF stream that PDFium builds objects of
    max_outline: int = 10_000  # PDF bookmarks read; DOCX headings (then body lines)
    max_encrypted_memory: int = 512 * 1024 * 1024  # an encrypted PDF's reader (a child process)
    max_depth: int = 32  # nested groups (PPTX), nested tables (DOCX)
    seconds: float = 60.0  # wall time, checked between pages and blocks


@dataclass(frozen=True, slots=True)
class Block:
    """A heading (`level` 1-6) or body text (`level` 0) of one page."""

    level: int
    text: str


@dataclass(frozen=True, slots=True)
class Page:
    """Page `number` (from 1) and its blocks, in reading order."""

    number: int
    blocks: tuple[Block, ...]

    @property
    def body(self) -> str:
        """The page's body text (its headings left out), blocks joined by LF."""
        return "\n".join(b.text for b in self.blocks if b.level == 0)


@dataclass(frozen=True, slots=True)
class Heading:
    """An outline entry: a heading of `level` 1-6 that starts on page `page`."""

    level: int
    title: str
    page: int


@dataclass(frozen=True, slots=True)
class PagedDocument:
    """A document read into pages: `format` is a value of `FORMATS`."""

    format: str
    pages: tuple[Page, ...]
    title: str  # from the document's metadata or <title>; "" when it has none
    outline: tuple[Heading, ...]

    @property
    def chars(self) -> int:
        return sum(len(b.text) for p in self.pages for b in p.blocks)


@dataclass(frozen=True, slots=True)
class DocumentSkip:
    """A file left out: `reason` is one of `REASONS`; `detail` says what was seen."""

    reason: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class DocumentText:
    """A document rendered as Markdown-ish text.

    `page_starts[i]` is the 1-based line of `text` where page `pages[i]` starts,
    non-decreasing (a page without text starts where the next one does); the page of a line
    is the last page starting at or before it (`page_at_line`).
    """

    text: str
    pages: tuple[int, ...]  # page numbers
    page_starts: tuple[int, ...]


class Refused(Exception):
    """Raised inside a reader to stop reading; `read_document` turns it into a skip."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason, detail)
        self.reason = reason
        self.detail = detail


class Meter:
    """The running budget of one read: characters so far and the time used (mutable)."""

    __slots__ = ("_clock", "_start", "chars", "inflated", "limits", "shown")

    def __init__(self, limits: Limits, clock: Clock) -> None:
        self.limits = limits
        self._clock = clock
        self._start = clock()
        self.chars = 0
        self.inflated = 0
        self.shown = 0

    def show(self, n: int) -> None:
        """Count `n` characters a PDF stream shows against `max_chars` (before PDFium)."""
        self.shown += n
        if self.shown > self.limits.max_chars:
            raise Refused("too-large", f"shows over {self.limits.max_chars} characters of text")

    def inflate(self, n: int) -> None:
        """Count `n` bytes inflated (a zip member, a PDF stream) against `max_inflated`."""
        self.inflated += n
        if self.inflated > self.limits.max_inflated:
            raise Refused(
                "too-large", f"inflates past {self.limits.max_inflated} bytes (the limit)"
            )

    def tick(self) -> None:
        """Refuse the file when the time budget is spent."""
        if self._clock() - self._start > self.limits.seconds:
            raise Refused("too-large", f"over the {self.limits.seconds:g} s time budget")

    def left(self) -> float:
        """Seconds of the time budget left (negative once it is spent)."""
        return self.limits.seconds - (self._clock() - self._start)

    def take(self, text: str) -> str:
        """Count `text` against the character budget and return it."""
        self.chars += len(text)
        if self.chars > self.limits.max_chars:
            raise Refused("too-large", f"over {self.limits.max_chars} characters of text")
        return text

    def pages(self, count: int) -> None:
        if count > self.limits.max_pages:
            raise Refused("too-large", f"{count} pages (the limit is {self.limits.max_pages})")


class Lines:
    """Lines joined by LF as they come (blank ones left out), held as a few long strings
    rather than one object a line: a slide of a million one-letter boxes (or a document of a million
    one-letter paragraphs) costs its text, not a million objects."""

    __slots__ = ("_done", "_open")

    def __init__(self) -> None:
        self._done: list[str] = []
        self._open: list[str] = []

    def add(self, line: str) -> None:
        if not line.strip():
            return
        self._open.append(line)
        if len(self._open) >= 1024:
            self._done.append("\n".join(self._open))
            self._open.clear()

    def text(self) -> str:
        return "\n".join([*self._done, *self._open])


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ufffe\uffff]")
_SPACE_CONTROL = re.compile(r"[\x0b\x0c\x1c-\x1f]")


def clean_text(text: str) -> str:
    """LF line ends; whitespace controls to spaces; other control characters dropped."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub("", _SPACE_CONTROL.sub(" ", text))


def one_line(text: str) -> str:
    """A heading or cell: all whitespace runs (newlines included) as one space."""
    return " ".join(clean_text(text).split())


def normalise_title(text: str | None) -> str:
    """A metadata title as one line, "" for none (control characters dropped)."""
    if not text:
        return ""
    return unicodedata.normalize("NFC", one_line(text))
