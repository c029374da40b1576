"""PPTX, read as a stream: the presentation's slide list, then each slide's XML and its
notes', parsed piece by piece (`xmlstream`, the standard library's expat), each shape dropped
once its text is taken.

Design notes: docs/internals.md, `corpus/slides.py`.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .pages import Block, Lines, Meter, Page, PagedDocument, Refused, clean_text, one_line
from .xmlstream import children
from .zipparts import member_events, read_package, relationship_ids, relationships

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

_P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
#: python-pptx's shape elements (`CT_GroupShape.iter_shape_elms`), groups aside.
_SHAPES = frozenset(_P + tag for tag in ("sp", "graphicFrame", "cxnSp", "pic", "contentPart"))
_GROUP, _TREE = _P + "grpSp", _P + "spTree"
#: Where a finished child is dropped: the part's root and the folders shapes sit in.
_SPINE = frozenset({_P + "sld", _P + "notes", _P + "cSld", _TREE, _GROUP})
_ROOTS = {"slide": _P + "sld", "notes": _P + "notes"}
_LINE_BREAK = "\v"
#: Elements of one unfinished shape (or of anything outside a shape) held before it ends.
MAX_HELD = 200_000
_TRUE = ("1", "true", "on")


@dataclass(frozen=True, slots=True)
class _Shape:
    """One shape's text, as its slide needs it."""

    title: bool  # a top-level placeholder of index 0 (python-pptx's title)
    placeholder: str  # its placeholder type ("" when none, "obj" when unnamed)
    lines: tuple[str, ...]
    text: str  # a text frame's text ("" for a table or a picture)


def read_pptx(data: bytes, meter: Meter) -> PagedDocument:
    return read_package(data, meter, "pptx", "ppt/presentation.xml", lambda *a: tuple(_pages(*a)))


def _pages(archive: zipfile.ZipFile, main: str, meter: Meter) -> Iterator[Page]:
    rels = relationship_ids(archive, main, meter, "slide")
    slides = []
    for ident in _slide_ids(archive, main, meter):
        name = rels.get(ident)
        if name is None:
            raise Refused("corrupt", f"{main}: slide {ident!r} has no slide part")
        slides.append(name)
    for number, name in enumerate(slides, start=1):
        meter.tick()
        yield Page(number, _slide(archive, name, meter))


def _slide_ids(archive: zipfile.ZipFile, main: str, meter: Meter) -> Iterator[str]:
    """The relationship ids of `p:sldIdLst`, in order, counted against `max_pages`; every
    element is dropped once it ends (nothing else of the part is needed)."""
    count = 0
    events = member_events(archive, main, meter, meter.limits.max_inflated)
    for items, (element, ancestors) in enumerate(events, 1):
        if items == 1:
            _check_root(element, ancestors, _P + "presentation", main)
        if items % 4096 == 0:
            meter.tick()
        if element.tag == _P + "sldId":
            count += 1
            meter.pages(count)
            yield element.get(_R_ID, "")
        if ancestors:
            ancestors[-1].remove(element)


def _check_root(element: Element, ancestors: list[Element], expected: str, name: str) -> None:
    root = ancestors[0] if ancestors else element
    if root.tag != expected:
        raise Refused("corrupt", f"{name}: its root is {root.tag}, not {expected}")


def _slide(archive: zipfile.ZipFile, name: str, meter: Meter) -> tuple[Block, ...]:
    """A slide's blocks: its title, then its other shapes' text and its notes."""
    title: _Shape | None = None
    body = Lines()
    for shape in _shapes(archive, name, "slide", meter):
        if shape.title and title is None:
            title = shape  # python-pptx's `shapes.title`: left out of the body
            continue
        for line in shape.lines:
            body.add(line)
    notes = relationships(archive, name, meter).get("notesSlide")
    if notes is not None:
        found = next((s for s in _shapes(archive, notes, "notes", meter) if _body(s)), None)
        if found is not None:
            body.add(clean_text(found.text))
    blocks: list[Block] = []
    if title is not None and one_line(title.text):
        blocks.append(Block(1, one_line(title.text)))
    text = body.text()
    if text:
        blocks.append(Block(0, text))
    return tuple(blocks)


def _body(shape: _Shape) -> bool:
    return shape.placeholder == "body"


def _shapes(archive: zipfile.ZipFile, name: str, kind: str, meter: Meter) -> Iterator[_Shape]:
    """The shapes of a slide or notes part, in order, groups opened: each taken when it
    ends and dropped (as is everything else beside them once it ends)."""
    held = items = 0
    started = False
    for element, ancestors in member_events(archive, name, meter, meter.limits.max_inflated):
        if not started:
            _check_root(element, ancestors, _ROOTS[kind], name)
            started = True
        tag = element.tag
        held += 1
        if tag == _A + "t":
            meter.take(element.text or "")  # the text budget, as it is parsed
        if held > MAX_HELD:
            raise Refused("too-large", f"{name}: a shape of over {MAX_HELD} elements")
        parent = ancestors[-1] if ancestors else None
        if parent is None or parent.tag not in _SPINE:
            continue  # inside a shape: held until the shape ends
        held = 0
        items += 1
        if items % 256 == 0:
            meter.tick()
        if tag in _SHAPES and parent.tag in (_TREE, _GROUP):
            top = parent.tag == _TREE
            if not top:
                _check_depth(ancestors, meter.limits.max_depth)
            yield _shape(element, top)
        parent.remove(element)  # done with it: memory is the current shape only


def _check_depth(ancestors: list[Element], depth: int) -> None:
    """Refuse a shape inside more than `depth` groups nested one in another."""
    for groups, group in enumerate(reversed(ancestors), start=1):
        if group.tag != _GROUP:
            return
        if groups > depth:
            raise Refused("too-large", "shape groups nested too deeply")


def _shape(element: Element, top: bool) -> _Shape:
    props = next((c for c in element if c.tag.startswith(_P + "nv")), None)
    placeholder, index = "", -1
    if props is not None:
        ph = props.find(f"{_P}nvPr/{_P}ph")
        if ph is not None:
            placeholder = ph.get("type", "obj")
            index = _int(ph.get("idx", "0"))
    title = top and index == 0
    if element.tag == _P + "sp":
        text = _frame_text(element.find(_P + "txBody"))
        return _Shape(title, placeholder, (clean_text(text),), text)
    table = element.find(f"{_A}graphic/{_A}graphicData/{_A}tbl")
    if element.tag == _P + "graphicFrame" and table is not None:
        rows = []
        for tr in children(table, _A + "tr"):
            cells = [
                one_line(_frame_text(tc.find(_A + "txBody")))
                for tc in children(tr, _A + "tc")
                if tc.get("hMerge") not in _TRUE and tc.get("vMerge") not in _TRUE
            ]
            rows.append(" | ".join(cells))
        return _Shape(title, placeholder, tuple(rows), "")
    return _Shape(title, placeholder, (), "")


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return -1


def _frame_text(body: Element | None) -> str:
    """A text frame's text: its paragraphs joined by LF (python-pptx's `TextFrame.text`)."""
    if body is None:
        return ""
    return "\n".join(_paragraph_text(p) for p in children(body, _A + "p"))


def _paragraph_text(p: Element) -> str:
    parts: list[str] = []
    for child in children(p, _A + "r", _A + "fld", _A + "br"):
        if child.tag == _A + "br":
            parts.append(_LINE_BREAK)
        else:
            t = child.find(_A + "t")
            parts.append((t.text or "") if t is not None else "")
    return "".join(parts)


__all__ = ["MAX_HELD", "read_pptx"]
