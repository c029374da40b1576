"""HTML (stdlib `html.parser`): one page; h1-h6 become headings, the rest body lines.

Design notes: docs/internals.md, `corpus/markup.py`.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from contextlib import suppress
from html.parser import HTMLParser

from .pages import Block, Heading, Meter, Page, PagedDocument, Refused, clean_text, one_line

_FEED = 64 * 1024
MAX_TITLE = 1000
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
        self.pending = 0  # characters in `line` and `cells`, not yet taken
        self.title_chars = 0

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
            self.pending = 0
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
        if self.in_title and self.title_chars < MAX_TITLE:
            self.title.append(data[: MAX_TITLE - self.title_chars])
            self.title_chars += len(self.title[-1])
        if self.hidden:
            return
        self.pending += len(data)
        if self.meter.chars + self.pending > self.meter.limits.max_chars:
            raise Refused("too-large", f"over {self.meter.limits.max_chars} characters of text")
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
        self.pending = 0
        if any(self.cells):
            self.lines.append(self.meter.take(" | ".join(self.cells)))
        self.cells = None

    def _end_line(self, keep: bool = False) -> None:
        if self.cells is not None or self.heading:
            self.line.append(" ")  # a <br> or <p> inside a cell or heading ends no line
            return
        raw = "".join(self.line)
        self.line = []
        self.pending = 0
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


def html_encoding(data: bytes) -> str:
    """The encoding to decode `data` with: a BOM's, UTF-8 when all of it is valid UTF-8,
    else the charset a <meta> tag names in the first 4 KiB, else Windows-1252."""
    for bom, encoding in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                          (codecs.BOM_UTF16_BE, "utf-16")):  # fmt: skip
        if data.startswith(bom):
            return encoding
    decoder = codecs.getincrementaldecoder("utf-8")()
    with suppress(UnicodeDecodeError):
        view = memoryview(data)
        for start in range(0, len(data), _FEED):
            decoder.decode(view[start : start + _FEED], final=start + _FEED >= len(data))
        return "utf-8"
    match = _CHARSET.search(data[:4096])
    if match:
        with suppress(LookupError):
            return codecs.lookup(match[1].decode("ascii")).name
    return "cp1252"


def decode_pieces(data: bytes) -> Iterator[str]:
    """The text of `data` (see `html_encoding`), decoded 64 KiB at a time."""
    decoder = codecs.getincrementaldecoder(html_encoding(data))(errors="replace")
    view = memoryview(data)
    for start in range(0, len(data), _FEED):
        yield decoder.decode(view[start : start + _FEED], final=start + _FEED >= len(data))
    if not data:
        yield decoder.decode(b"", final=True)


def read_html(data: bytes, meter: Meter) -> PagedDocument:
    collector = _Collector(meter)
    for piece in decode_pieces(data):
        meter.tick()
        collector.feed(piece)
    blocks = collector.finish()
    outline = tuple(Heading(b.level, b.text, 1) for b in blocks if b.level)
    title = one_line("".join(collector.title))
    return PagedDocument("html", (Page(1, blocks),), title, outline)
