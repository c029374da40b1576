"""Document readers: PDF, DOCX, PPTX and HTML as pages of text, cited by page.

Design notes: docs/internals.md, `corpus/documents.py`.
"""

from __future__ import annotations

import bisect
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

from .pages import (
    Clock,
    DocumentSkip,
    DocumentText,
    Limits,
    Meter,
    PagedDocument,
    Refused,
    one_line,
)

__all__ = [
    "FORMATS",
    "REASONS",
    "DocumentSkip",
    "DocumentText",
    "Limits",
    "PagedDocument",
    "document_format",
    "page_at_line",
    "read_document",
    "read_document_file",
    "render_markdown",
]

#: Skip reason codes, in the order the readers check them.
REASONS = ("encrypted", "no-text", "corrupt", "too-large")
#: File suffix (lower case) to document format.
FORMATS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
}

_PDFIUM = threading.Lock()  # PDFium is not thread-safe


def document_format(name: str) -> str | None:
    """The format of a file name from its suffix, or None when it is not a document."""
    return FORMATS.get(Path(name).suffix.lower())


def read_document(
    data: bytes,
    fmt: str,
    limits: Limits | None = None,
    clock: Clock = time.monotonic,
) -> PagedDocument | DocumentSkip:
    """Read the bytes of one document of format `fmt` (a value of `FORMATS`)."""
    limits = limits or Limits()
    if fmt not in set(FORMATS.values()):
        known = ", ".join(sorted(set(FORMATS.values())))
        raise ValueError(f"unknown document format {fmt!r}; expected one of: {known}")
    if len(data) > limits.max_bytes:
        return DocumentSkip("too-large", f"{len(data)} bytes (the limit is {limits.max_bytes})")
    meter = Meter(limits, clock)
    try:
        if fmt == "pdf":
            with _PDFIUM:
                doc = _reader(fmt)(data, meter)
        else:
            doc = _reader(fmt)(data, meter)
    except Refused as refused:
        return DocumentSkip(refused.reason, refused.detail)
    except RecursionError:
        return DocumentSkip("too-large", "nested too deeply")
    # A scanned PDF with bookmarks has headings but no text layer.
    body_only = fmt == "pdf"
    if not any(
        b.text.strip() for p in doc.pages for b in p.blocks if b.level == 0 or not body_only
    ):
        return DocumentSkip("no-text", f"{len(doc.pages)} pages without text")
    return doc


def read_document_file(
    path: Path,
    limits: Limits | None = None,
    clock: Clock = time.monotonic,
) -> PagedDocument | DocumentSkip:
    """Read a document from disk: its size is checked before a byte is read.

    Raises ValueError for a suffix that is not in `FORMATS`, and OSError when the file
    cannot be read (the caller's walk reports those as its own skips).
    """
    limits = limits or Limits()
    fmt = document_format(path.name)
    if fmt is None:
        raise ValueError(f"{path}: not a document ({', '.join(sorted(FORMATS))})")
    size = path.stat().st_size
    if size > limits.max_bytes:
        return DocumentSkip("too-large", f"{size} bytes (the limit is {limits.max_bytes})")
    with path.open("rb") as f:
        data = f.read(limits.max_bytes + 1)  # the file may have grown since the stat
    return read_document(data, fmt, limits, clock)


def _reader(fmt: str) -> Callable[[bytes, Meter], PagedDocument]:
    if fmt == "pdf":
        from .pdf import read_pdf

        return read_pdf
    if fmt == "docx":
        from .docx import read_docx

        return read_docx
    if fmt == "pptx":
        from .slides import read_pptx

        return read_pptx
    from .markup import read_html

    return read_html


# A body line that the Markdown chunker would read as structure: an ATX heading, a setext
# underline or a thematic break, a code fence. It gets a backslash in front.
_STRUCTURE = re.compile(r"^[ \t]*(#{1,6}([ \t]|$)|`{3,}|~{3,}|={2,}[ \t]*$|-{2,}[ \t]*$)")


def render_markdown(doc: PagedDocument) -> DocumentText:
    """Markdown-ish text: headings as `#` lines, body lines escaped, a blank line between
    blocks; and where each page starts (see `DocumentText`)."""
    parts: list[str] = []
    starts: list[int] = []
    line = 1
    for page in doc.pages:
        starts.append(line)
        for block in page.blocks:
            if block.level:
                chunk = "#" * min(block.level, 6) + " " + one_line(block.text)
            else:
                text = block.text.strip("\n")
                if not text.strip():
                    continue
                chunk = "\n".join("\\" + x if _STRUCTURE.match(x) else x for x in text.split("\n"))
            chunk += "\n\n"
            parts.append(chunk)
            line += chunk.count("\n")
    return DocumentText("".join(parts), tuple(p.number for p in doc.pages), (*starts,))


def page_at_line(text: DocumentText, line: int) -> int:
    """The number of the page that line `line` (1-based) of `text.text` belongs to."""
    i = bisect.bisect_right(text.page_starts, line) - 1
    return text.pages[max(i, 0)]
