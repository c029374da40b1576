"""The streamed PPTX reader (`corpus/slides.py`): it reads what python-pptx reads (python-pptx
is the oracle here, on generated decks with groups, tables, merges, line breaks, fields,
notes and connectors), and stops at its budgets while it parses."""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from typing import Any

import pptx
import pytest
from pptx.util import Inches

from chromasync.corpus.documents import DocumentSkip, Limits, read_document
from chromasync.corpus.pages import Block, Page, clean_text, normalise_title, one_line
from chromasync.corpus.slides import MAX_HELD
from tests import bombs


def _oracle(data: bytes) -> tuple[str, tuple[Page, ...]]:
    """What the reader gave while python-pptx parsed the deck (before `slides`)."""
    deck = pptx.Presentation(io.BytesIO(data))
    pages = []
    for number, slide in enumerate(deck.slides, start=1):
        blocks: list[Block] = []
        title = slide.shapes.title
        if title is not None and one_line(title.text_frame.text):
            blocks.append(Block(1, one_line(title.text_frame.text)))
        lines: list[str] = []
        for shape in _walk(slide.shapes):
            if title is not None and shape.shape_id == title.shape_id:
                continue
            if shape.has_text_frame:
                lines.append(clean_text(shape.text_frame.text))
            elif getattr(shape, "has_table", False):
                for row in shape.table.rows:
                    lines.append(
                        " | ".join(one_line(c.text) for c in row.cells if not c.is_spanned)
                    )
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            lines.append(clean_text(slide.notes_slide.notes_text_frame.text))
        body = "\n".join(x for x in lines if x.strip())
        if body:
            blocks.append(Block(0, body))
        pages.append(Page(number, tuple(blocks)))
    return normalise_title(deck.core_properties.title), tuple(pages)


def _walk(shapes: Any) -> Iterator[Any]:
    for shape in shapes:
        if hasattr(shape, "shapes"):
            yield from _walk(shape.shapes)
        else:
            yield shape


def _deck(seed: int) -> bytes:
    r = random.Random(seed)
    deck = pptx.Presentation()
    if r.random() < 0.5:
        deck.core_properties.title = f"Deck {seed}"
    for _ in range(r.randint(1, 5)):
        slide = deck.slides.add_slide(deck.slide_layouts[r.choice([0, 1, 5, 6, 8])])
        if slide.shapes.title is not None and r.random() < 0.8:
            slide.shapes.title.text = r.choice(["Re\vsults", "A  title\nsecond", "", "x"])
        for ph in slide.placeholders:
            if ph.placeholder_format.idx != 0 and ph.has_text_frame:
                ph.text_frame.text = r.choice(["a\nb", "para\vbreak", "", "  spaced  "])
        if r.random() < 0.5:
            box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(2), Inches(1))
            box.text_frame.text = "box\ntext"
            box.text_frame.paragraphs[0].add_line_break()
            box.text_frame.paragraphs[0].add_run().text = "after a break"
        if r.random() < 0.5:
            group = slide.shapes.add_group_shape()
            group.shapes.add_textbox(0, 0, Inches(1), Inches(1)).text_frame.text = "grouped"
            inner = group.shapes.add_group_shape()
            inner.shapes.add_textbox(0, 0, Inches(1), Inches(1)).text_frame.text = "deeper"
        if r.random() < 0.5:
            table = slide.shapes.add_table(3, 3, 0, Inches(2), Inches(4), Inches(1)).table
            for row in range(3):
                for col in range(3):
                    table.cell(row, col).text = f"{row}/{col}\nmore"
            if r.random() < 0.5:
                table.cell(0, 0).merge(table.cell(1, 1))
        if r.random() < 0.5:
            slide.notes_slide.notes_text_frame.text = "notes\nhere"
        if r.random() < 0.2:
            slide.shapes.add_connector(1, 0, 0, 100, 100)
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


@pytest.mark.parametrize("seed", range(16))
def test_the_stream_reads_what_python_pptx_reads(seed: int) -> None:
    data = _deck(seed)
    title, pages = _oracle(data)
    found = read_document(data, "pptx")
    if not any(b.text.strip() for p in pages for b in p.blocks):
        assert isinstance(found, DocumentSkip) and found.reason == "no-text"
        return
    assert not isinstance(found, DocumentSkip), found
    assert (found.title, found.pages) == (title, pages)
    assert [(h.title, h.page) for h in found.outline] == [
        (b.text, p.number) for p in pages for b in p.blocks if b.level
    ]


def _with_slide(xml: bytes) -> bytes:
    return bombs.replace_member(_deck(1), "ppt/slides/slide1.xml", xml)


def _skip(data: bytes, reason: str, limits: Limits | None = None) -> str:
    found = read_document(data, "pptx", limits)
    assert isinstance(found, DocumentSkip), found
    assert found.reason == reason, found
    return found.detail


def test_groups_nested_too_deeply_are_too_large() -> None:
    deep = 40
    groups = b"<p:grpSp>" * deep + bombs._SHAPE + b"</p:sp>" + b"</p:grpSp>" * deep
    detail = _skip(_with_slide(bombs._SLIDE_HEAD + groups + bombs._SLIDE_TAIL), "too-large")
    assert "nested too deeply" in detail


def test_one_shape_of_too_many_elements_is_too_large() -> None:
    paragraphs = b"<a:p/>" * (MAX_HELD + 1)
    shape = bombs._SHAPE + b"<p:txBody>" + paragraphs + b"</p:txBody></p:sp>"
    detail = _skip(_with_slide(bombs._SLIDE_HEAD + shape + bombs._SLIDE_TAIL), "too-large")
    assert f"over {MAX_HELD} elements" in detail


def test_the_text_budget_is_checked_while_a_slide_is_parsed() -> None:
    data = bombs.pptx_shapes(_deck(1), 2)  # 2 MiB of text boxes: ~230,000 characters
    _skip(data, "too-large", Limits(max_chars=10_000))


def test_slides_are_counted_as_the_list_is_parsed() -> None:
    data = _deck(3)
    assert len(pptx.Presentation(io.BytesIO(data)).slides) >= 2
    _skip(data, "too-large", Limits(max_pages=1))


def test_a_part_that_is_no_slide_is_corrupt() -> None:
    assert "not" in _skip(_with_slide(b'<?xml version="1.0"?><x/>'), "corrupt")
    _skip(_with_slide(b"<p:sld"), "corrupt")  # cut short
