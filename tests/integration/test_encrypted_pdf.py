"""An encrypted PDF is read in a child process under a memory budget and a deadline
(`corpus.pdfchild`): its text is what PDFium gives in process, a bomb inside it is a
`too-large` skip naming the budget, a password-protected file is still `encrypted`."""

from __future__ import annotations

import time
import zlib

import pytest

from chromasync.corpus import pdf, pdfchild
from chromasync.corpus.documents import DocumentSkip, PagedDocument, read_document
from chromasync.corpus.pages import Limits, Meter
from tests import bombs

from ..conftest import SHARED

PDFS = SHARED / "corpora" / "pdf-samples"
TEXT = b"BT /F1 12 Tf 72 720 Td (Secret espresso notes) Tj ET"


def test_an_encrypted_pdf_reads_as_it_does_in_process() -> None:
    data = bombs.one_page_pdf(zlib.compress(TEXT), encrypted=True)
    found = read_document(data, "pdf")
    assert isinstance(found, PagedDocument), found
    assert found.pages[0].body == "Secret espresso notes"
    assert found == pdf.read_pdf_here(data, Meter(Limits(), time.monotonic))


def test_a_sample_that_opens_with_an_empty_password_keeps_its_text() -> None:
    path = PDFS / "text" / "issue9972-1.pdf"
    if not path.is_file():
        pytest.skip("../shared/corpora/pdf-samples is not present")
    data = path.read_bytes()
    assert b"/Encrypt" in data
    found = read_document(data, "pdf")
    assert isinstance(found, PagedDocument), found
    assert found == pdf.read_pdf_here(data, Meter(Limits(), time.monotonic))
    assert "Personal Vitality" in found.pages[0].body


def test_a_password_protected_sample_is_still_encrypted() -> None:
    path = PDFS / "encrypted" / "print_protection.pdf"
    if not path.is_file():
        pytest.skip("../shared/corpora/pdf-samples is not present")
    found = read_document(path.read_bytes(), "pdf")
    assert isinstance(found, DocumentSkip) and found.reason == "encrypted", found


def test_the_memory_budget_is_what_stops_the_child() -> None:
    """A 64 MiB encrypted stream of spaces fits the default budget (a page without text),
    and is a `too-large` skip naming the budget when the budget is 16 MiB."""
    data = bombs.pdf_bomb(64, encrypted=True)
    found = read_document(data, "pdf")
    assert isinstance(found, DocumentSkip) and found.reason == "no-text", found
    found = read_document(data, "pdf", Limits(max_encrypted_memory=16 << 20))
    assert isinstance(found, DocumentSkip) and found.reason == "too-large", found
    assert f"{16 << 20} byte memory budget" in found.detail


def test_a_child_past_its_deadline_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pdfchild, "_START", 0.0)
    data = bombs.one_page_pdf(zlib.compress(TEXT), encrypted=True)
    found = read_document(data, "pdf", Limits(seconds=0.001))
    assert isinstance(found, DocumentSkip) and found.reason == "too-large", found
    assert "time budget" in found.detail


def test_the_character_budget_applies_to_an_encrypted_pdf() -> None:
    content = b"BT /F1 12 Tf 72 720 Td " + b"(aaaaaaaaaa) Tj " * 2000 + b"ET"
    data = bombs.one_page_pdf(zlib.compress(content), encrypted=True)
    found = read_document(data, "pdf", Limits(max_chars=1000))
    assert isinstance(found, DocumentSkip) and found.reason == "too-large", found
    assert "1000 characters" in found.detail
