"""Documents in the pure stages: extensions, page metadata, the citation format, triage."""

from __future__ import annotations

import pytest

from chromasync.chunk import Budget, chunk_document
from chromasync.config.kinds import (
    BINARY_EXTENSIONS,
    DEFAULT_EXTENSIONS,
    DOCUMENT_EXTENSIONS,
    OPT_IN_DOCUMENT_EXTENSIONS,
)
from chromasync.corpus.documents import FORMATS, PagedDocument, render_markdown
from chromasync.corpus.documents import REASONS as DOCUMENT_REASONS
from chromasync.corpus.pages import Block, Page
from chromasync.corpus.read import decode_document
from chromasync.corpus.walk import REASONS, classify_extension
from chromasync.embed.tokens import default_token_meter
from chromasync.plan.triage import RecordContext, build_records, triage
from chromasync.records import Discovery, Document, FileStat, FileState, Hit


def test_document_extensions_match_the_readers() -> None:
    assert set(FORMATS) == DOCUMENT_EXTENSIONS | OPT_IN_DOCUMENT_EXTENSIONS
    assert set(DEFAULT_EXTENSIONS) >= DOCUMENT_EXTENSIONS
    assert not OPT_IN_DOCUMENT_EXTENSIONS & set(DEFAULT_EXTENSIONS)
    assert not set(FORMATS) & BINARY_EXTENSIONS
    for suffix in FORMATS:
        assert classify_extension(f"a/b{suffix.upper()}") == ("document", None)
    # every reason a reader gives is a reason the summaries know
    assert set(DOCUMENT_REASONS) <= set(REASONS)


@pytest.mark.parametrize(
    ("meta", "citation", "page"),
    [
        ({}, "a.md:3-9", None),
        ({"doc_format": "pdf", "page": 12, "page_end": 12}, "a.md p. 12", 12),
        ({"doc_format": "pdf", "page": 2, "page_end": 4}, "a.md p. 2-4", 2),
        ({"page": 5, "page_end": 6}, "a.md:3-9", None),  # a front matter `page:` key
        ({"doc_format": "pdf", "page": "5"}, "a.md:3-9", None),
    ],
)
def test_hit_citation(meta: dict[str, object], citation: str, page: int | None) -> None:
    hit = Hit("id", "a.md", "s", "", 3, 9, 1.0, "text", metadata=meta)  # type: ignore[arg-type]
    assert hit.citation == citation and hit.page == page


def _paged(pages: int) -> PagedDocument:
    return PagedDocument(
        "pdf",
        tuple(
            Page(n, (Block(1, f"Part {n}"), Block(0, f"Body of page {n}. " * 40)))
            for n in range(1, pages + 1)
        ),
        "Report",
        (),
    )


def test_records_of_a_document_carry_pages() -> None:
    rendered = render_markdown(_paged(3))
    doc = Document(
        "r.pdf",
        rendered.text,
        1,
        "h",
        "document",
        None,
        {"title": "Report"},
        doc_format="pdf",
        pages=rendered.pages,
        page_starts=rendered.page_starts,
    )
    chunks = chunk_document(doc, Budget(64, default_token_meter()))
    records = build_records(doc, chunks, 1, RecordContext("s", "notes", "m"))
    assert len(records) >= 3
    for record, chunk in zip(records, chunks, strict=True):
        meta = record.metadata
        assert meta["doc_format"] == "pdf" and 1 <= meta["page"] <= meta["page_end"] <= 3
        assert f"Body of page {meta['page']}" in chunk.text or chunk.text.startswith("#")
    assert {r.metadata["page"] for r in records} == {1, 2, 3}


def test_text_records_carry_no_page() -> None:
    doc = Document("a.md", "# A\n\nbody\n", 1, "h", "markdown", "markdown", {"page": 3})
    chunks = chunk_document(doc, Budget(64, default_token_meter()))
    [record] = build_records(doc, chunks, 1, RecordContext("s", "notes", "m"))
    assert "doc_format" not in record.metadata and "page_end" not in record.metadata


def test_decode_document_reads_a_document_and_skips_a_broken_one() -> None:
    html = b"<html><body><h1>Kettle</h1><p>Descale monthly.</p></body></html>"
    outcome = decode_document(FileStat("k.html", "/k.html", len(html), 0), html, "h")
    assert outcome.document is not None and outcome.document.kind == "document"
    assert outcome.document.pages == (1,) and "Descale monthly." in outcome.document.text
    broken = b"%PDF-1.4\n garbage"
    outcome = decode_document(FileStat("b.pdf", "/b.pdf", len(broken), 0), broken, "h")
    assert outcome.skip is not None and outcome.skip.reason == "corrupt"
    assert outcome.file_hash == "h"  # a content skip remembered by its hash, as for text


def test_a_document_remembered_as_binary_is_read_again() -> None:
    """A release that did not read documents remembered opted-in PDFs as `binary` skips."""
    files = tuple(FileStat(p, "/" + p, 10, 5, 5, 1) for p in ("a.pdf", "b.png", "c.docx"))
    manifest = {
        f.rel_path: FileState(f.rel_path, 10, 5, "h", 0, 10**12, (), "binary", 5, 1) for f in files
    }
    sorted_ = triage(Discovery(files, ()), manifest)
    assert [f.rel_path for f in sorted_.to_read] == ["a.pdf", "c.docx"]
    assert sorted_.remembered_skips == {"b.png": "binary"}
