"""DOCX (python-docx) and PPTX (python-pptx), after a zip check.

Before either library opens the file, its zip directory is checked: the member count and
the declared uncompressed size of all members (zipfile never inflates a member past its
declared size, so this bounds memory; a lie fails the CRC check and reads as `corrupt`).
A password-protected Office file is not a zip but an OLE compound file holding an
`EncryptedPackage` stream: that is `encrypted`; any other non-zip is `corrupt`.

DOCX: one page (Word's page layout is not in the file). Paragraphs styled `Title` or
`Heading 1`..`Heading 9` are headings (levels above 6 become 6); other paragraphs are body
lines; a table is one line per row, its cells joined by " | " (a merged cell once).
PPTX: one page per slide; the title placeholder is a level-1 heading, then the text of the
other shapes in order (groups walked, tables as rows), then the speaker notes.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

from .pages import (
    Block,
    Heading,
    Meter,
    Page,
    PagedDocument,
    Refused,
    clean_text,
    normalise_title,
    one_line,
)

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_HEADING_STYLE = re.compile(r"^heading ([1-9])$", re.IGNORECASE)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
# What a broken package makes python-docx / python-pptx / lxml / zipfile raise.
_BROKEN = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    KeyError,
    ValueError,
    TypeError,
    AttributeError,
    IndexError,
    SyntaxError,  # lxml's XMLSyntaxError
    EOFError,
    OSError,
    NotImplementedError,  # an unsupported zip compression method
)


def check_zip(data: bytes, meter: Meter) -> None:
    """Refuse an encrypted, non-zip or oversized package before it is parsed."""
    if data.startswith(_OLE_MAGIC):
        if "EncryptedPackage".encode("utf-16-le") in data:
            raise Refused("encrypted", "a password-protected Office file")
        raise Refused("corrupt", "an OLE compound file, not an Office Open XML package")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise Refused("corrupt", f"not a readable zip package: {exc}") from exc
    limits = meter.limits
    if len(members) > limits.max_zip_members:
        raise Refused("too-large", f"{len(members)} zip members (limit {limits.max_zip_members})")
    total = sum(m.file_size for m in members)
    if total > limits.max_uncompressed:
        raise Refused("too-large", f"{total} bytes uncompressed (limit {limits.max_uncompressed})")


def _open(data: bytes, meter: Meter, opener: Callable[[io.BytesIO], Any]) -> Any:
    check_zip(data, meter)
    try:
        return opener(io.BytesIO(data))
    except _BROKEN as exc:
        raise Refused("corrupt", f"{type(exc).__name__}: {exc}") from exc


def read_docx(data: bytes, meter: Meter) -> PagedDocument:
    import docx
    from docx.text.paragraph import Paragraph

    document = _open(data, meter, docx.Document)
    levels: dict[str | None, int] = {}  # style id -> heading level (0: body)

    def level_of(element: Any, paragraph: Paragraph) -> int:
        style_id = element.style  # CT_P.style: the w:pStyle id
        if style_id not in levels:
            name = (paragraph.style.name or "") if paragraph.style is not None else ""
            match = _HEADING_STYLE.match(name)
            levels[style_id] = (
                1 if name.lower() == "title" else min(int(match[1]), 6) if match else 0
            )
        return levels[style_id]

    blocks: list[Block] = []
    try:
        for n, element in enumerate(_body_items(document.element.body, meter.limits.max_depth)):
            if n % 256 == 0:
                meter.tick()
            if element.tag == _W + "p":
                paragraph = Paragraph(element, document)
                level = level_of(element, paragraph)
                text = one_line(paragraph.text) if level else clean_text(paragraph.text)
                if text.strip():
                    blocks.append(Block(level, meter.take(text)))
            else:
                rows = [meter.take(_docx_row(tr, Paragraph, document)) for tr in _rows(element)]
                if any(r.strip(" |") for r in rows):
                    blocks.append(Block(0, "\n".join(rows)))
        title = normalise_title(document.core_properties.title)
    except _BROKEN as exc:
        raise Refused("corrupt", f"{type(exc).__name__}: {exc}") from exc
    outline = tuple(Heading(b.level, b.text, 1) for b in blocks if b.level)
    return PagedDocument("docx", (Page(1, _merge_body(blocks)),), title, outline)


def _body_items(parent: Any, depth: int) -> Iterator[Any]:
    """The paragraphs (w:p) and tables (w:tbl) of a body, content controls opened."""
    if depth < 0:
        raise Refused("too-large", "content controls nested too deeply")
    for child in parent.iterchildren():
        if child.tag in (_W + "p", _W + "tbl"):
            yield child
        elif child.tag == _W + "sdt":
            for content in child.iterchildren(_W + "sdtContent"):
                yield from _body_items(content, depth - 1)


def _rows(table: Any) -> Iterator[Any]:
    for child in table.iterchildren():
        if child.tag == _W + "tr":
            yield child


def _docx_row(tr: Any, paragraph: Any, parent: Any) -> str:
    cells: list[str] = []
    for tc in tr.iterchildren(_W + "tc"):
        # A cell continuing a vertical merge holds nothing; its text is in the row above.
        merge = tc.find(f"{_W}tcPr/{_W}vMerge")
        if merge is not None and merge.get(_W + "val", "continue") == "continue":
            cells.append("")
            continue
        texts = (paragraph(p, parent).text for p in tc.iter(_W + "p"))
        cells.append(one_line(" ".join(texts)))
    return " | ".join(cells)


def _merge_body(blocks: list[Block]) -> tuple[Block, ...]:
    """Adjacent body blocks joined into one (a paragraph per line); headings kept apart."""
    merged: list[Block] = []
    body: list[str] = []
    for block in blocks:
        if block.level:
            if body:
                merged.append(Block(0, "\n".join(body)))
                body = []
            merged.append(block)
        else:
            body.append(block.text)
    if body:
        merged.append(Block(0, "\n".join(body)))
    return tuple(merged)


def read_pptx(data: bytes, meter: Meter) -> PagedDocument:
    import pptx

    presentation = _open(data, meter, pptx.Presentation)
    pages: list[Page] = []
    try:
        slides = presentation.slides
        meter.pages(len(slides))
        for number, slide in enumerate(slides, start=1):
            meter.tick()
            blocks: list[Block] = []
            title_shape = slide.shapes.title
            if title_shape is not None and one_line(title_shape.text_frame.text):
                blocks.append(Block(1, meter.take(one_line(title_shape.text_frame.text))))
            lines: list[str] = []
            for shape in _shapes(slide.shapes, meter.limits.max_depth):
                if title_shape is not None and shape.shape_id == title_shape.shape_id:
                    continue
                lines.extend(meter.take(x) for x in _shape_lines(shape))
            if slide.has_notes_slide:
                notes = slide.notes_slide.notes_text_frame
                if notes is not None:
                    lines.append(meter.take(clean_text(notes.text)))
            body = "\n".join(x for x in lines if x.strip())
            if body:
                blocks.append(Block(0, body))
            pages.append(Page(number, tuple(blocks)))
        title = normalise_title(presentation.core_properties.title)
    except _BROKEN as exc:
        raise Refused("corrupt", f"{type(exc).__name__}: {exc}") from exc
    outline = tuple(Heading(1, b.text, p.number) for p in pages for b in p.blocks if b.level)
    return PagedDocument("pptx", tuple(pages), title, outline)


def _shapes(shapes: Any, depth: int) -> Iterator[Any]:
    if depth < 0:
        raise Refused("too-large", "shape groups nested too deeply")
    for shape in shapes:
        if hasattr(shape, "shapes"):  # a group
            yield from _shapes(shape.shapes, depth - 1)
        else:
            yield shape


def _shape_lines(shape: Any) -> list[str]:
    if shape.has_text_frame:
        return [clean_text(shape.text_frame.text)]
    if getattr(shape, "has_table", False):
        rows = []
        for row in shape.table.rows:
            cells = [one_line(c.text) for c in row.cells if not c.is_spanned]
            rows.append(" | ".join(cells))
        return rows
    return []
