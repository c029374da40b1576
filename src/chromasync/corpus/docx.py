"""DOCX, read as a stream: the main document part parsed piece by piece (`xmlstream`, the
standard library's expat), each paragraph or table dropped once its text is taken.

Design notes: docs/internals.md, `corpus/docx.py`.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .pages import Block, Lines, Meter, Page, PagedDocument, Refused, clean_text, one_line
from .xmlstream import children
from .zipparts import member_events, read_package, relationships

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING_STYLE = re.compile(r"^heading ([1-9])$", re.IGNORECASE)
_P, _TBL, _BODY = _W + "p", _W + "tbl", _W + "body"
_SDT, _SDT_CONTENT = _W + "sdt", _W + "sdtContent"
_RUN_TEXT = {_W + "tab": "\t", _W + "ptab": "\t", _W + "cr": "\n", _W + "noBreakHyphen": "-"}
#: Elements of one paragraph or table held before it ends (its subtree is in memory).
MAX_HELD = 200_000
#: The most bytes of `styles.xml` (streamed), and the paragraph styles kept from it (a
#: paragraph of a style past them takes the default style's level).
MAX_SMALL_PART = 16 * 1024 * 1024
MAX_STYLES = 10_000


def read_docx(data: bytes, meter: Meter) -> PagedDocument:
    return read_package(data, meter, "docx", "word/document.xml", _pages)


def _pages(archive: zipfile.ZipFile, main: str, meter: Meter) -> tuple[Page, ...]:
    levels, default = _styles(archive, main, meter)
    return (Page(1, _merge_body(_blocks(archive, main, meter, levels, default), meter)),)


def _styles(archive: zipfile.ZipFile, main: str, meter: Meter) -> tuple[dict[str, int], int]:
    """Heading level (0: body) by paragraph style id (the first `MAX_STYLES`), and the
    default paragraph style's; `styles.xml` parsed as a stream, each style dropped once read."""
    name = relationships(archive, main, meter).get("styles", "word/styles.xml")
    levels: dict[str, int] = {}
    default = held = 0
    try:
        for style, ancestors in member_events(archive, name, meter, MAX_SMALL_PART):
            held += 1
            if held > MAX_HELD:
                raise Refused("too-large", f"{name}: a style of over {MAX_HELD} elements")
            if len(ancestors) != 1:
                continue  # the root, or inside a style: taken when the style ends
            parent = ancestors[0]
            held = 0
            if style.tag == _W + "style" and style.get(_W + "type") == "paragraph":
                level = _style_level(style)
                ident = style.get(_W + "styleId")
                if ident is not None and len(levels) < MAX_STYLES:
                    levels.setdefault(ident, level)
                if style.get(_W + "default") in ("1", "true", "on"):
                    default = level
            parent.remove(style)
    except KeyError:
        return {}, 0
    return levels, default


def _style_level(style: Element) -> int:
    label = style.find(_W + "name")
    text = (label.get(_W + "val") or "") if label is not None else ""
    match = _HEADING_STYLE.match(text)
    return 1 if text.lower() == "title" else min(int(match[1]), 6) if match else 0


def _blocks(
    archive: zipfile.ZipFile, main: str, meter: Meter, levels: dict[str, int], default: int
) -> Iterator[Block]:
    held = items = 0
    limits = meter.limits
    for element, ancestors in member_events(archive, main, meter, limits.max_inflated):
        held += 1
        tag = element.tag
        if tag == _W + "t":
            meter.take(element.text or "")  # the text budget, as it is parsed
        if held > MAX_HELD:
            raise Refused("too-large", f"a paragraph or table of over {MAX_HELD} elements")
        if not _at_body(ancestors, limits.max_depth):
            continue
        held = 0
        items += 1
        if items % 256 == 0:
            meter.tick()
        if tag == _P:
            block = _paragraph(element, levels, default)
            if block is not None:
                yield block
        elif tag == _TBL:
            rows = [_row(tr) for tr in children(element, _W + "tr")]
            if any(r.strip(" |") for r in rows):
                yield Block(0, "\n".join(rows))
        ancestors[-1].remove(element)  # done with it: memory is the current item only


def _at_body(ancestors: list[Element], depth: int) -> bool:
    """Whether an element inside `ancestors` is a body item (content controls opened)."""
    for steps, parent in enumerate(reversed(ancestors)):
        if steps == 2 * depth + 2:
            raise Refused("too-large", "content controls nested too deeply")
        tag = parent.tag
        if tag == _BODY:
            return True
        if tag not in (_SDT, _SDT_CONTENT):
            return False
    return False


def _paragraph(p: Element, levels: dict[str, int], default: int) -> Block | None:
    style = p.find(f"{_W}pPr/{_W}pStyle")
    ident = style.get(_W + "val") if style is not None else None
    level = levels.get(ident, default) if ident is not None else default
    raw = _paragraph_text(p)
    text = one_line(raw) if level else clean_text(raw)
    return Block(level, text) if text.strip() else None


def _paragraph_text(p: Element) -> str:
    parts: list[str] = []
    for child in children(p, _W + "r", _W + "hyperlink"):
        runs = children(child, _W + "r") if child.tag == _W + "hyperlink" else (child,)
        for run in runs:
            for item in run:
                tag = item.tag
                if tag == _W + "t":
                    parts.append(item.text or "")
                elif tag == _W + "br":
                    kind = item.get(_W + "type", "textWrapping")
                    parts.append("\n" if kind == "textWrapping" else "")
                elif tag in _RUN_TEXT:
                    parts.append(_RUN_TEXT[tag])
    return "".join(parts)


def _row(tr: Element) -> str:
    cells: list[str] = []
    for tc in children(tr, _W + "tc"):
        # A cell continuing a vertical merge holds nothing; its text is in the row above.
        merge = tc.find(f"{_W}tcPr/{_W}vMerge")
        if merge is not None and merge.get(_W + "val", "continue") == "continue":
            cells.append("")
            continue
        cells.append(one_line(" ".join(_paragraph_text(p) for p in tc.iter(_P))))
    return " | ".join(cells)


def _merge_body(blocks: Iterator[Block], meter: Meter) -> tuple[Block, ...]:
    """Adjacent body blocks joined into one (a paragraph per line) as they come, headings
    kept apart; past `max_outline` headings, a heading paragraph is a body line (a
    document of a million one-letter headings holds its text, not a million blocks)."""
    merged: list[Block] = []
    body = Lines()
    headings = 0
    for block in blocks:
        if block.level and headings < meter.limits.max_outline:
            headings += 1
            text = body.text()
            if text:
                merged.append(Block(0, text))
                body = Lines()
            merged.append(block)
        else:
            body.add(block.text)
    text = body.text()
    if text:
        merged.append(Block(0, text))
    return tuple(merged)


__all__ = ["MAX_HELD", "read_docx"]
