"""HTML (stdlib `html.parser`): one page; h1-h6 become headings, the rest body lines.

Block elements (p, div, li, tr, br, ...) end a line; whitespace inside a line collapses to
one space except inside <pre>. A table row is its cells joined by " | ". The contents of
script, style, template, noscript and svg, and <title> (the title) are left
out. The bytes are decoded as UTF-8 (a BOM, UTF-16 BOMs honoured), else as the charset a
<meta> tag names in the first 4 KiB, else as Windows-1252. The parser is fed 64 KiB at a
time, with the time budget checked between feeds.
"""

from __future__ import annotations

import codecs
import re
from html.parser import HTMLParser

from .pages import Block, Heading, Meter, Page, PagedDocument, clean_text, one_line

_FEED = 64 * 1024
_HIDDEN = frozenset({"script", "style", "template", "noscript", "svg", "title"})
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
_BLOCK = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "br", "caption", "dd", "details",
        "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form",
        "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table",
        "tbody", "tfoot", "thead", "tr", "ul",
    }
)  # fmt: skip
_HEADING = {f"h{n}": n for n in range(1, 7)}
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


class _Collector(HTMLParser):
    def __init__(self, meter: Meter) -> None:
        super().__init__(convert_charrefs=True)
        self.meter = meter
        self.blocks: list[Block] = []
        self.title: list[str] = []
        self.line: list[str] = []  # text of the line being built
        self.lines: list[str] = []  # body lines since the last heading
        self.cells: list[str] | None = None  # cells of the table row being built
        self.hidden = 0  # depth inside hidden elements
        self.in_title = False
        self.heading = 0  # level of the open heading
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            if tag == "br":
                self._end_line()
            return
        if tag == "title":
            self.in_title = True
        if tag in _HIDDEN:
            self.hidden += 1
            return
        if tag in _HEADING:
            self._end_line()
            self.heading = _HEADING[tag]
        elif tag == "tr":
            self._end_line()
            self.cells = []
        elif tag in ("td", "th") and self.cells is not None:
            self._end_cell()
        elif tag in _BLOCK:
            self._end_line()
        if tag == "pre":
            self.pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag in _HIDDEN:
            self.hidden = max(self.hidden - 1, 0)
            return
        if tag in _HEADING and self.heading:
            text = one_line("".join(self.line))
            self.line = []
            if text:
                self._flush_body()
                self.blocks.append(Block(self.heading, self.meter.take(text)))
            self.heading = 0
        elif tag in ("td", "th") and self.cells is not None:
            self._end_cell()
        elif tag == "tr" or (tag == "table" and self.cells is not None):
            self._end_row()
        elif tag in _BLOCK:
            self._end_line()
        if tag == "pre":
            self.pre = max(self.pre - 1, 0)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        if self.hidden:
            return
        if self.pre:
            lines = data.split("\n")
            for piece in lines[:-1]:
                self.line.append(piece)
                self._end_line(keep=True)
            self.line.append(lines[-1])
        else:
            self.line.append(data)

    def _end_cell(self) -> None:
        if self.cells is not None and self.line:
            self.cells.append(one_line("".join(self.line)))
        self.line = []

    def _end_row(self) -> None:
        if self.cells is None:
            return
        self._end_cell()
        if any(self.cells):
            self.lines.append(self.meter.take(" | ".join(self.cells)))
        self.cells = None

    def _end_line(self, keep: bool = False) -> None:
        if self.cells is not None or self.heading:
            self.line.append(" ")  # a <br> or <p> inside a cell or heading ends no line
            return
        raw = "".join(self.line)
        self.line = []
        text = clean_text(raw).rstrip() if keep else one_line(raw)
        if text or keep:
            self.lines.append(self.meter.take(text))

    def _flush_body(self) -> None:
        body = "\n".join(self.lines).strip("\n")
        if body.strip():
            self.blocks.append(Block(0, body))
        self.lines = []

    def finish(self) -> tuple[Block, ...]:
        self.close()
        self._end_row()
        self.heading = 0
        self._end_line()
        self._flush_body()
        return tuple(self.blocks)


def decode_html(data: bytes) -> str:
    for bom, encoding in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                          (codecs.BOM_UTF16_BE, "utf-16")):  # fmt: skip
        if data.startswith(bom):
            return data.decode(encoding, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    match = _CHARSET.search(data[:4096])
    if match:
        try:
            return data.decode(match[1].decode("ascii"), errors="replace")
        except LookupError:
            pass
    return data.decode("cp1252", errors="replace")


def read_html(data: bytes, meter: Meter) -> PagedDocument:
    text = decode_html(data)
    collector = _Collector(meter)
    for start in range(0, len(text), _FEED):
        meter.tick()
        collector.feed(text[start : start + _FEED])
    blocks = collector.finish()
    outline = tuple(Heading(b.level, b.text, 1) for b in blocks if b.level)
    title = one_line("".join(collector.title))
    return PagedDocument("html", (Page(1, blocks),), title, outline)
