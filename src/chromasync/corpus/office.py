"""PPTX (python-pptx), after its package is checked and repacked within bounds (DOCX is
read as a stream by `docx`).

Before python-pptx opens the file, `zipparts` checks its zip directory, and `repack` reads
its XML parts in counted pieces (each at most `Limits.max_part`, together `max_xml`) and
empties the others (media: no text), so python-pptx parses a bounded package whatever the
file declares: a slide that inflates to a gigabyte is `too-large` once its cap is read.

PPTX: one page per slide; the title placeholder is a level-1 heading, then the text of the
other shapes in order (groups walked, tables as rows), then the speaker notes.
"""

from __future__ import annotations

import io
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
from .zipparts import open_package, read_member

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


def repack(data: bytes, meter: Meter) -> bytes:
    """The package again, with its XML parts read within bounds (each at most
    `max_part`, all at most `max_xml`, counted while they inflate) and every other part
    (images, media, embedded files: no text) emptied, stored without compression: what
    python-pptx parses is bounded whatever the package declares."""
    limits = meter.limits
    out = io.BytesIO()
    xml = 0
    with open_package(data, meter) as archive, zipfile.ZipFile(out, "w") as copy:
        for info in archive.infolist():
            name = info.filename
            if info.is_dir():
                continue
            if name.lower().endswith((".xml", ".rels")):
                body = read_member(archive, name, meter, limits.max_part)
                xml += len(body)
                if xml > limits.max_xml:
                    raise Refused("too-large", f"over {limits.max_xml} bytes of XML parts")
            else:
                body = b""
            copy.writestr(name, body)
    return out.getvalue()


def _open(data: bytes, meter: Meter, opener: Callable[[io.BytesIO], Any]) -> Any:
    try:
        packed = repack(data, meter)
        return opener(io.BytesIO(packed))
    except _BROKEN as exc:
        raise Refused("corrupt", f"{type(exc).__name__}: {exc}") from exc


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
