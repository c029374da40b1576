"""Document readers: records, skips with reason codes, budgets, page mapping, linear time.

PDFs come from ../shared/corpora/pdf-samples (read only); DOCX, PPTX and HTML files are
built in tmp_path with python-docx and python-pptx themselves.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import docx
import pptx
import pytest
from pptx.util import Inches

from chromasync.corpus.documents import (
    REASONS,
    DocumentSkip,
    DocumentText,
    Limits,
    PagedDocument,
    document_format,
    page_at_line,
    read_document,
    read_document_file,
    render_markdown,
)
from chromasync.corpus.pages import Block, Page

from ..conftest import SHARED
from ..doubling import assert_linear

PDFS = SHARED / "corpora" / "pdf-samples"


def _pdf(folder: str, name: str) -> bytes:
    return (PDFS / folder / name).read_bytes()


def _doc(result: PagedDocument | DocumentSkip) -> PagedDocument:
    assert isinstance(result, PagedDocument), result
    return result


def _skip(result: PagedDocument | DocumentSkip, reason: str) -> DocumentSkip:
    assert isinstance(result, DocumentSkip), result
    assert result.reason == reason, result
    assert result.reason in REASONS
    return result


def check_page_map(doc: PagedDocument, rendered: DocumentText) -> None:
    """Every body line of page N, and every heading, is found in page N's range."""
    lines = rendered.text.split("\n")
    assert len(rendered.page_starts) == len(doc.pages)
    assert list(rendered.page_starts) == sorted(rendered.page_starts)
    for page in doc.pages:
        for block in page.blocks:
            for raw in block.text.split("\n"):
                if not raw.strip():
                    continue
                hits = [n for n, x in enumerate(lines, 1) if x.rstrip().endswith(raw.strip())]
                assert any(page_at_line(rendered, n) == page.number for n in hits), (page, raw)


# -- PDF ------------------------------------------------------------------------------


def test_pdf_pages_outline_and_title() -> None:
    doc = _doc(read_document(_pdf("text", "file_pdfjs_test.pdf"), "pdf"))
    assert doc.format == "pdf"
    assert [p.number for p in doc.pages] == [1, 2, 3, 4, 5]
    assert doc.title == "Untitled"
    assert doc.outline and doc.outline[0].title == "Mozilla automated testing"
    assert all(1 <= h.page <= 5 and 1 <= h.level <= 6 for h in doc.outline)
    assert doc.pages[0].body.startswith("Mozilla automated testing\n")
    assert all("\r" not in p.body for p in doc.pages)
    rendered = render_markdown(doc)
    assert rendered.text.startswith("# Mozilla automated testing\n\n")
    assert "Page 1" not in rendered.text
    check_page_map(doc, rendered)


def test_pdf_text_matches_pdfium_word_counts() -> None:
    doc = _doc(read_document(_pdf("text", "calrgb.pdf"), "pdf"))
    assert len(doc.pages) == 17
    assert sum(len(p.body.split()) for p in doc.pages) == 10030  # expected.json
    check_page_map(doc, render_markdown(doc))


@pytest.mark.parametrize(
    ("folder", "name", "reason"),
    [
        # fails to load with no error recorded ("PDFium: Success" in a fresh thread): it
        # declares /Encrypt, so it is encrypted (first here: a password error left by an
        # earlier file in the same thread would hide that)
        ("encrypted", "issue19484_1.pdf", "encrypted"),
        ("encrypted", "issue6010_1.pdf", "encrypted"),
        ("encrypted", "print_protection.pdf", "encrypted"),
        # PDFium says "incorrect password" but the file has no /Encrypt: it is corrupt.
        ("broken", "Brotli-Prototype-FileA.pdf", "corrupt"),
        ("broken", "bug1980958.pdf", "corrupt"),
        ("broken", "poppler-937-0-fuzzed.pdf", "corrupt"),  # opens; its page does not
        ("no-text", "Embedded_font.pdf", "no-text"),
        ("no-text", "annotation-tx.pdf", "no-text"),
    ],
)
def test_pdf_bad_input_is_a_skip(folder: str, name: str, reason: str) -> None:
    _skip(read_document(_pdf(folder, name), "pdf"), reason)


def _pdf_with_strings(title: bytes, bookmark: bytes) -> bytes:
    """A one-page PDF whose /Info /Title and one bookmark's /Title are the hex strings given."""
    content = zlib.compress(b"BT /F1 12 Tf 72 720 Td (kiwi fruit) Tj ET")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R /Outlines 6 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Outlines /First 7 0 R /Last 7 0 R /Count 1 >>",
        b"<< /Title <%s> /Parent 6 0 R /Dest [3 0 R /XYZ 0 792 0] >>" % bookmark,
        b"<< /Title <%s> >>" % title,
    ]
    out, offsets = bytearray(b"%PDF-1.7\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 8 0 R >>\n" % (len(objects) + 1)
    return bytes(out + b"startxref\n%d\n%%%%EOF\n" % xref)


def test_pdf_strings_of_utf16_that_is_none_are_left_out() -> None:
    """A /Title or a bookmark of UTF-16 with a lone surrogate (`FEFF D800`) was a
    `UnicodeDecodeError` traceback that ended the whole ingest (and every later one)."""
    good = _doc(read_document(_pdf_with_strings(b"FEFF0054", b"FEFF0042"), "pdf"))
    assert good.title == "T" and [h.title for h in good.outline] == ["B"]
    doc = _doc(read_document(_pdf_with_strings(b"FEFFD8000041", b"FEFFD8000042"), "pdf"))
    assert doc.title == "" and doc.outline == ()
    assert "kiwi fruit" in doc.pages[0].blocks[0].text


@pytest.mark.parametrize("data", [b"", b"%PDF-1.7\n", b"not a pdf at all" * 100])
def test_pdf_garbage_is_corrupt(data: bytes) -> None:
    _skip(read_document(data, "pdf"), "corrupt")


def test_pdf_truncated_is_corrupt() -> None:
    data = _pdf("text", "calrgb.pdf")
    _skip(read_document(data[: len(data) // 2], "pdf"), "corrupt")


def test_pdf_budgets() -> None:
    data = _pdf("text", "calrgb.pdf")  # 17 pages, 40k characters
    assert "17 pages" in _skip(read_document(data, "pdf", Limits(max_pages=16)), "too-large").detail
    _skip(read_document(data, "pdf", Limits(max_chars=10_000)), "too-large")
    _skip(read_document(data, "pdf", Limits(max_bytes=len(data) - 1)), "too-large")
    _doc(read_document(data, "pdf", Limits(max_pages=17, max_chars=40_372)))


class FakeClock:
    """Each reading advances `step` seconds."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        self.now += self.step
        return self.now


def test_time_budget_uses_the_injected_clock() -> None:
    data = _pdf("text", "calrgb.pdf")
    clock = FakeClock(step=1.0)
    skip = _skip(read_document(data, "pdf", Limits(seconds=5), clock=clock), "too-large")
    assert "time budget" in skip.detail
    assert clock.calls < 17  # stopped before reading every page
    _doc(read_document(data, "pdf", Limits(seconds=1000), clock=FakeClock(step=1.0)))


def test_read_document_file(tmp_path: Path) -> None:
    path = tmp_path / "Report.PDF"
    path.write_bytes(_pdf("text", "issue918.pdf"))
    assert document_format(path.name) == "pdf"
    assert _doc(read_document_file(path)).format == "pdf"
    _skip(read_document_file(path, Limits(max_bytes=100)), "too-large")
    with pytest.raises(ValueError, match="not a document"):
        read_document_file(tmp_path / "notes.txt")
    with pytest.raises(ValueError, match="unknown document format"):
        read_document(b"", "txt")


# -- DOCX -----------------------------------------------------------------------------


def _docx_bytes(build: docx.document.Document) -> bytes:
    out = io.BytesIO()
    build.save(out)
    return out.getvalue()


def sample_docx(paragraphs: int = 3) -> bytes:
    d = docx.Document()
    d.core_properties.title = "Field  guide"
    d.add_paragraph("The Guide", style="Title")
    d.add_heading("Install", level=1)
    for i in range(paragraphs):
        d.add_paragraph(f"Paragraph {i} says something about installing.")
    d.add_paragraph("# not a heading, just text")
    d.add_heading("Linux", level=2)
    table = d.add_table(rows=3, cols=3)
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            cell.text = f"r{r}c{c}"
    table.cell(0, 0).merge(table.cell(0, 1)).text = "wide"
    table.cell(1, 2).merge(table.cell(2, 2)).text = "tall"
    d.add_heading("Deep", level=9)
    d.add_paragraph("Last words.")
    return _docx_bytes(d)


def test_docx_headings_paragraphs_tables() -> None:
    doc = _doc(read_document(sample_docx(), "docx"))
    assert doc.title == "Field guide"
    assert [(h.level, h.title, h.page) for h in doc.outline] == [
        (1, "The Guide", 1),
        (1, "Install", 1),
        (2, "Linux", 1),
        (6, "Deep", 1),
    ]
    (page,) = doc.pages
    assert page.blocks[0] == Block(1, "The Guide")
    assert page.blocks[2].text.split("\n") == [
        "Paragraph 0 says something about installing.",
        "Paragraph 1 says something about installing.",
        "Paragraph 2 says something about installing.",
        "# not a heading, just text",
    ]
    table = page.blocks[4].text.split("\n")
    assert table == ["wide | r0c2", "r1c0 | r1c1 | tall", "r2c0 | r2c1 | "]
    rendered = render_markdown(doc)
    assert "\n# Install\n\nParagraph 0" in rendered.text
    assert "\n\\# not a heading, just text\n" in rendered.text
    assert "\n###### Deep\n\nLast words.\n" in rendered.text
    check_page_map(doc, rendered)


def test_docx_ending_in_a_piece_shorter_than_its_open_tag_keeps_its_last_words() -> None:
    """Parts are parsed in 64 KiB pieces, and a piece waits while a token is open; the last
    paragraph, in a last piece shorter than the tag left open before it, is parsed only
    when the parser closes, and is read then (it was lost)."""
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    piece = 64 * 1024
    body = f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{w}"><w:body>'
    filler = "<w:p><w:r><w:t>Filler text.</w:t></w:r></w:p>"
    body += filler * ((piece - 400 - len(body)) // len(filler))
    body += " " * (piece - 400 - len(body))  # the boundary falls 400 bytes into the tag
    last = '<w:p w:rsidR="' + "0" * 600 + '"><w:r><w:t>The last words.</w:t></w:r></w:p>'
    xml = (body + last + "</w:body></w:document>").encode()
    assert len(xml) - piece < 400  # the last piece is shorter than the token left open
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        package.writestr("word/document.xml", xml)
    doc = _doc(read_document(out.getvalue(), "docx"))
    assert doc.pages[0].blocks[-1].text.endswith("The last words.")


def test_docx_empty_is_no_text() -> None:
    _skip(read_document(_docx_bytes(docx.Document()), "docx"), "no-text")


def test_docx_truncated_and_garbage_are_corrupt() -> None:
    data = sample_docx()
    for cut in (len(data) // 2, len(data) - 10, 30):
        _skip(read_document(data[:cut], "docx"), "corrupt")
    _skip(read_document(b"PK\x03\x04" + b"\x00" * 100, "docx"), "corrupt")
    _skip(read_document(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 504, "docx"), "corrupt")


def test_docx_zip_without_document_part_is_corrupt() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("hello.txt", "hi")
    _skip(read_document(out.getvalue(), "docx"), "corrupt")


def test_office_encrypted_package() -> None:
    ole = (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 100 + "EncryptedPackage".encode("utf-16-le")
    )
    _skip(read_document(ole, "docx"), "encrypted")
    _skip(read_document(ole, "pptx"), "encrypted")


def _with_members(data: bytes, extra: Iterator[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            dst.writestr(info, src.read(info))
        for name, payload in extra:
            dst.writestr(name, payload)
    return out.getvalue()


def test_docx_zip_bomb_many_members() -> None:
    members = ((f"word/media/x{i}.bin", b"") for i in range(10_001))
    bomb = _with_members(sample_docx(), members)
    assert "zip members" in _skip(read_document(bomb, "docx"), "too-large").detail


def test_docx_zip_bomb_huge_uncompressed() -> None:
    # 8 MiB of zeros deflate to ~8 KiB; the declared size is checked before any reading.
    bomb = _with_members(sample_docx(), iter([("word/media/zeros.bin", bytes(8 << 20))]))
    assert len(bomb) < 100_000
    limits = Limits(max_uncompressed=4 << 20)
    assert "uncompressed" in _skip(read_document(bomb, "docx", limits), "too-large").detail
    _doc(read_document(bomb, "docx"))  # under the default budget


def test_docx_character_budget() -> None:
    _skip(read_document(sample_docx(200), "docx", Limits(max_chars=2_000)), "too-large")


@pytest.mark.timing
def test_docx_reading_is_linear() -> None:
    files = {n: sample_docx(n) for n in (2_000, 4_000)}
    _doc(read_document(files[2_000], "docx"))  # the imports, once
    assert_linear(
        lambda n: _doc(read_document(files[n], "docx")), 2_000, bound=3.5, what="2x paragraphs"
    )


# -- PPTX -----------------------------------------------------------------------------


def sample_pptx() -> bytes:
    deck = pptx.Presentation()
    deck.core_properties.title = "Quarterly"
    first = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
    first.shapes.title.text = "Results"
    first.placeholders[1].text_frame.text = "Revenue went up\nCosts went down"
    first.notes_slide.notes_text_frame.text = "Say it slowly."
    second = deck.slides.add_slide(deck.slide_layouts[5])  # title only
    second.shapes.title.text = "Table"
    rows = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for r in range(2):
        for c in range(2):
            rows.cell(r, c).text = f"{r}-{c}"
    third = deck.slides.add_slide(deck.slide_layouts[6])  # blank
    third.shapes.add_textbox(Inches(1), Inches(1), Inches(3), Inches(1)).text_frame.text = "---"
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def test_pptx_one_page_per_slide() -> None:
    doc = _doc(read_document(sample_pptx(), "pptx"))
    assert doc.title == "Quarterly"
    assert [p.number for p in doc.pages] == [1, 2, 3]
    assert [(h.title, h.page) for h in doc.outline] == [("Results", 1), ("Table", 2)]
    assert doc.pages[0].blocks == (
        Block(1, "Results"),
        Block(0, "Revenue went up\nCosts went down\nSay it slowly."),
    )
    assert doc.pages[1].blocks == (Block(1, "Table"), Block(0, "0-0 | 0-1\n1-0 | 1-1"))
    rendered = render_markdown(doc)
    assert rendered.text.endswith("\n\\---\n\n")  # not a setext underline
    assert page_at_line(rendered, rendered.page_starts[2]) == 3
    check_page_map(doc, rendered)


def test_pptx_slide_cap_and_truncation() -> None:
    data = sample_pptx()
    _skip(read_document(data, "pptx", Limits(max_pages=2)), "too-large")
    _skip(read_document(data[: len(data) // 3], "pptx"), "corrupt")
    _skip(read_document(sample_docx(), "pptx"), "corrupt")  # a DOCX is not a deck


# -- HTML -----------------------------------------------------------------------------

HTML = """<!doctype html><html><head><title>The  &amp; Page</title>
<style>h1 { color: red }</style><script>var x = "<h1>no</h1>";</script></head>
<body><h1>Main <em>title</em></h1><p>First   paragraph,
wrapped.</p><p>Second<br>line</p>
<h3>Table</h3><table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2<br>3</td></tr></table>
<pre>keep   this
# and this</pre><ul><li>one</li><li>two</li></ul></body></html>"""


def test_html_headings_and_text() -> None:
    doc = _doc(read_document(HTML.encode(), "html"))
    assert doc.title == "The & Page"
    assert [(h.level, h.title) for h in doc.outline] == [(1, "Main title"), (3, "Table")]
    (page,) = doc.pages
    assert page.blocks == (
        Block(1, "Main title"),
        Block(0, "First paragraph, wrapped.\nSecond\nline"),
        Block(3, "Table"),
        Block(0, "a | b\n1 | 2 3\nkeep   this\n# and this\none\ntwo"),
    )
    rendered = render_markdown(doc)
    assert "no</h1>" not in rendered.text
    assert "\n\\# and this\n" in rendered.text
    check_page_map(doc, rendered)


@pytest.mark.parametrize(
    ("data", "title"),
    [
        ("<p>café</p>".encode(), ""),
        ("<title>café</title><p>x</p>".encode("utf-16"), "café"),
        (b'<meta charset="iso-8859-1"><title>caf\xe9</title><p>x</p>', "café"),
        (b"<title>caf\xe9</title><p>x</p>", "café"),  # not UTF-8: Windows-1252
    ],
)
def test_html_encodings(data: bytes, title: str) -> None:
    assert _doc(read_document(data, "html")).title == title


@pytest.mark.parametrize(
    "data", [b"", b"<html><script>x</script></html>", b"<div><div></div></div>" * 10]
)
def test_html_without_text(data: bytes) -> None:
    _skip(read_document(data, "html"), "no-text")


def test_html_unclosed_and_deep_markup_is_bounded() -> None:
    deep = ("<div>" * 200_000 + "x").encode()
    doc = _doc(read_document(deep, "html"))
    assert doc.pages[0].body == "x"
    _skip(read_document(b"<p>" + b"word " * 10_000, "html", Limits(max_chars=1_000)), "too-large")


# -- rendering ------------------------------------------------------------------------


def test_render_maps_empty_pages_to_the_next_page() -> None:
    doc = PagedDocument(
        "pdf",
        (
            Page(1, (Block(0, "alpha\nbeta"),)),
            Page(2, (Block(0, "  "),)),
            Page(3, (Block(2, "Gamma\nsection"), Block(0, "gamma"))),
        ),
        "",
        (),
    )
    rendered = render_markdown(doc)
    assert rendered.text == "alpha\nbeta\n\n## Gamma section\n\ngamma\n\n"
    assert rendered.page_starts == (1, 4, 4)
    assert [page_at_line(rendered, n) for n in range(1, 8)] == [1, 1, 1, 3, 3, 3, 3]
