"""PDF: the text layer of each page through PDFium (pypdfium2), bookmarks as headings.

Design notes: docs/internals.md, `corpus/pdf.py`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from .pages import (
    Block,
    Heading,
    Limits,
    Meter,
    Page,
    PagedDocument,
    Refused,
    clean_text,
    normalise_title,
    one_line,
)
from .pdfchild import OUT_OF_MEMORY, read_in_child, virtual_size
from .pdfscan import measure_streams

_ENCRYPT = b"/Encrypt"  # a file's /Encrypt dictionary (never in a compressed object stream)


def read_pdf(data: bytes, meter: Meter) -> PagedDocument:
    measure_streams(data, meter)  # a decompression bomb never reaches PDFium
    if _ENCRYPT in data:  # its streams could not be measured: read under an OS budget
        return read_in_child(data, meter)
    return read_pdf_here(data, meter)


def read_pdf_here(data: bytes, meter: Meter) -> PagedDocument:
    """Read `data` with PDFium in this process (`read_pdf` once its streams are measured,
    or `pdfchild`'s child process for an encrypted file)."""
    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise _refusal(exc, data) from exc
    try:
        count = len(pdf)
        meter.pages(count)
        outline = _outline(pdf, count, meter)
        by_page: defaultdict[int, list[Block]] = defaultdict(list)
        for entry in outline:
            by_page[entry.page].append(Block(entry.level, entry.title))
        pages: list[Page] = []
        for index in range(count):
            meter.tick()
            body = meter.take(_page_text(pdf, index, meter))
            pages.append(Page(index + 1, (*by_page[index + 1], Block(0, body))))
        title = normalise_title(_metadata(pdf, "Title"))
        return PagedDocument("pdf", tuple(pages), title, outline)
    finally:
        pdf.close()


def _refusal(exc: pdfium.PdfiumError, data: bytes) -> Refused:
    code = exc.err_code
    if code == pdfium_c.FPDF_ERR_SECURITY or (
        code in (pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SUCCESS) and _ENCRYPT in data
    ):
        return Refused("encrypted", str(exc))
    return Refused("corrupt", str(exc))


def _page_text(pdf: pdfium.PdfDocument, index: int, meter: Meter) -> str:
    try:
        page = pdf[index]
    except pdfium.PdfiumError as exc:
        raise Refused("corrupt", f"page {index + 1}: {exc}") from exc
    try:
        textpage = page.get_textpage()
        try:
            n = textpage.count_chars()
            if meter.chars + n > meter.limits.max_chars:  # before decoding it
                raise Refused("too-large", f"over {meter.limits.max_chars} characters of text")
            text: str = textpage.get_text_range() if n > 0 else ""
        finally:
            textpage.close()
    except pdfium.PdfiumError as exc:
        raise Refused("corrupt", f"page {index + 1}: {exc}") from exc
    finally:
        page.close()
    return clean_text(text)


def _outline(pdf: pdfium.PdfDocument, count: int, meter: Meter) -> tuple[Heading, ...]:
    """Bookmarks that point at a page, in outline order (at most `max_outline` read)."""
    headings: list[Heading] = []
    for seen, bookmark in enumerate(pdf.get_toc(max_depth=16)):
        if seen >= meter.limits.max_outline:
            break
        if seen % 64 == 0:
            meter.tick()
        try:
            title = one_line(bookmark.get_title() or "")
        except UnicodeDecodeError:  # UTF-16 with a lone surrogate: no heading (as for a title)
            continue
        dest = bookmark.get_dest()
        index = dest.get_index() if dest is not None else None
        if title and index is not None and 0 <= index < count:
            headings.append(Heading(min(bookmark.level + 1, 6), meter.take(title), index + 1))
    return tuple(headings)


def _metadata(pdf: pdfium.PdfDocument, key: str) -> str:
    try:
        value = pdf.get_metadata_value(key)
    except (pdfium.PdfiumError, UnicodeDecodeError):  # (UTF-16 with a lone surrogate: none)
        return ""
    return value if isinstance(value, str) else ""


def child_main() -> None:
    """The child of `pdfchild.read_in_child`: `python -c ... PATH LIMITS_JSON`; prints one
    JSON object. PDFium is loaded (this module's import) before the baseline is taken."""
    import resource  # Unix only: the child runs where the memory budget can be set

    path, limits = Path(sys.argv[1]), Limits(**json.loads(sys.argv[2]))
    data = path.read_bytes()
    budget = virtual_size() + limits.max_encrypted_memory
    resource.setrlimit(resource.RLIMIT_AS, (budget, budget))
    try:
        doc = read_pdf_here(data, Meter(limits, time.monotonic))
        reply: dict[str, Any] = {
            "pages": [[p.number, [[b.level, b.text] for b in p.blocks]] for p in doc.pages],
            "title": doc.title,
            "outline": [[h.level, h.title, h.page] for h in doc.outline],
        }
    except Refused as refused:
        reply = {"refused": [refused.reason, refused.detail]}
    except MemoryError:
        os._exit(OUT_OF_MEMORY)
    except RecursionError:
        reply = {"refused": ["too-large", "nested too deeply"]}
    try:
        sys.stdout.buffer.write(
            json.dumps(reply, ensure_ascii=False).encode("utf-8", "surrogatepass")
        )
        sys.stdout.flush()
    except MemoryError:
        os._exit(OUT_OF_MEMORY)
