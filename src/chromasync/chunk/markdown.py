"""Markdown: heading sections, the heading path embedded as context.

Design notes: docs/internals.md, `chunk/markdown.py`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from ..records import Chunk, Document
from . import Budget
from .layout import Draft, Layout, Span, Unit

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FENCE_ANY = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(={2,}|-{2,})[ \t]*$")
_LIST = re.compile(r"^( {0,3})([-*+]|\d{1,9}[.)])([ \t]|$)")
_BREAK = re.compile(r"^ {0,3}([-*_])([ \t]*\1){2,}[ \t]*$")
_ATTRIBUTES = re.compile(r"[ \t]*\{[#.][^}]*\}[ \t]*$")
_NOT_SETEXT = ("|", ">", "<", "{{", "- ", "* ", "+ ")
_SUMMARY_KEY = re.compile(r"^[\"']?(title|description)[\"']?\s*:", re.IGNORECASE)
_INK = re.compile(r"\S")
#: Sections merge while the chunk being built is smaller than this share of the budget.
MERGE_SHARE = 2
#: Past this many headings that open a section, a heading stays in the section it is in
#: (as DOCX headings past `corpus.pages.Limits.max_outline` are body lines).
MAX_SECTIONS = 10_000


@dataclass(frozen=True, slots=True)
class Block:
    """Lines `first`..`last` of one Markdown block."""

    kind: str  # heading, fence, list, paragraph
    first: int
    last: int
    level: int = 0  # a heading's level; a list's indentation
    title: str = ""


@dataclass(slots=True)
class Section:
    """A heading (or the text before the first one) and the lines under it, `first`..`last`
    (0 while it has no block)."""

    level: int  # 0 for the text before the first heading
    path: tuple[str, ...]
    first: int = 0
    last: int = 0
    heading_only: bool = True  # its blocks are all headings

    def add(self, block: Block) -> None:
        self.first = self.first or block.first
        self.last = block.last
        self.heading_only = self.heading_only and block.kind == "heading"


def parse_blocks(
    lines: Sequence[str], first: int, last: int, tick: Callable[[], None] = lambda: None
) -> Iterator[Block]:
    """The blocks of lines `first`..`last` (1-based), in order, as they are found; `tick`
    is called per line."""
    number = first
    while number <= last:
        tick()
        line = lines[number - 1]
        if not line.strip():
            number += 1
            continue
        fence = _FENCE.match(line)
        if fence:
            end = _fence_end(lines, number, fence.group(1), last, tick)
            yield Block("fence", number, end)
            number = end + 1
            continue
        atx = _ATX.match(line)
        if atx:
            yield Block("heading", number, number, len(atx.group(1)), _title(atx.group(2)))
            number += 1
            continue
        item = _LIST.match(line)
        if item and not _BREAK.match(line):
            base = len(item.group(1))
            end = max(e for _, e in _list_items(lines, number, last, base, tick))
            yield Block("list", number, end, base)
            number = end + 1
            continue
        block = _paragraph(lines, number, last, tick)
        yield block
        number = block.last + 1


def _title(text: str) -> str:
    return _ATTRIBUTES.sub("", text).strip()


def _fence_end(
    lines: Sequence[str], start: int, marker: str, last: int, tick: Callable[[], None]
) -> int:
    """The closing line of the fence opened at `start` (an unclosed fence runs to the end)."""
    closing = re.compile(r"^[ \t]*" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}[ \t]*$")
    for number in range(start + 1, last + 1):
        tick()
        if closing.match(lines[number - 1]):
            return number
    return last


def _paragraph(lines: Sequence[str], start: int, last: int, tick: Callable[[], None]) -> Block:
    end = start
    while end < last:
        tick()
        following = lines[end]
        if not following.strip() or _FENCE.match(following) or _ATX.match(following):
            break
        if _SETEXT.match(following) and not lines[start - 1].lstrip().startswith(_NOT_SETEXT):
            title = " ".join(lines[n - 1].strip() for n in range(start, end + 1))
            level = 1 if following.strip().startswith("=") else 2
            return Block("heading", start, end + 1, level, _title(title))
        end += 1
    return Block("paragraph", start, end)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _list_items(
    lines: Sequence[str], start: int, last: int, base: int, tick: Callable[[], None]
) -> Iterator[tuple[int, int]]:
    """The (first, last) line of each top-level item of the list starting at `start`."""
    item_start = end = start
    fence: str | None = None
    opened = _FENCE_ANY.match(lines[start - 1][_indent(lines[start - 1]) + 1 :].lstrip())
    if opened:
        fence = opened.group(1)
    number = start + 1
    while number <= last:
        tick()
        line = lines[number - 1]
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                fence = None
            end = number
            number += 1
            continue
        if not line.strip():
            ahead = number
            while ahead <= last and not lines[ahead - 1].strip():
                ahead += 1
            if ahead > last:
                break
            following = lines[ahead - 1]
            sibling = _LIST.match(following) and _indent(following) < base + 2
            if not sibling and _indent(following) < base + 2:
                break
            number = ahead
            continue
        indent = _indent(line)
        item = _LIST.match(line)
        if item and indent < base + 2 and not _BREAK.match(line):
            yield item_start, end
            item_start = number
        elif indent < base + 2 and (_ATX.match(line) or _FENCE.match(line) or _BREAK.match(line)):
            break
        opened = _FENCE_ANY.match(line)
        if opened:
            fence = opened.group(1)
        end = number
        number += 1
    yield item_start, end


def build_sections(blocks: Iterable[Block], title: str) -> list[Section]:
    """Cut the blocks at headings (the first `MAX_SECTIONS`); each section gets its
    heading path."""
    root = (title,) if title else ()
    sections = [Section(0, root)]
    stack: list[tuple[int, str]] = []
    for block in blocks:
        if block.kind != "heading" or len(sections) > MAX_SECTIONS:
            sections[-1].add(block)
            continue
        while stack and stack[-1][0] >= block.level:
            stack.pop()
        stack.append((block.level, block.title))
        titles = tuple(t for _, t in stack if t)
        own_title = any(level == 1 for level, _ in stack) or (
            bool(titles) and titles[0].casefold() == title.casefold()
        )
        sections.append(Section(block.level, titles if own_title else root + titles))
        sections[-1].add(block)
    return [s for s in sections if s.first]


def glue_headings(sections: list[Section]) -> list[Section]:
    """Prepend each heading-only section to the section that follows it."""
    glued: list[Section] = []
    pending: Section | None = None
    for section in sections:
        heading_only = section.heading_only
        if pending is not None:
            if section.path[: len(pending.path)] == pending.path:
                path = section.path
            else:
                path = _common(pending.path, section.path)
            level = min(pending.level, section.level)
            section = Section(level, path, pending.first, section.last, heading_only)
        pending = section if heading_only else None
        if not heading_only:
            glued.append(section)
    if pending is not None:
        glued.append(pending)
    return glued


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def front_matter_chunks(doc: Document, budget: Budget) -> list[Chunk]:
    """A body-less Markdown page (a section index): its title and description lines.

    The chunk is the exact excerpt of the front matter from the first `title:` or
    `description:` line to the end of the last one (with its continuation lines).
    """
    layout = Layout(doc.text, 1, budget)
    lines = layout.lines
    fence_end = doc.body_start_line - 2  # index of the closing fence
    keys = [i for i in range(1, fence_end) if _SUMMARY_KEY.match(lines[i])]
    if not keys:
        return []
    last = keys[-1]
    while last + 1 < fence_end and lines[last + 1][:1] in (" ", "\t"):
        last += 1
    span = layout.lines_span(keys[0] + 1, last + 1)
    if span is None:
        return []
    title = doc.metadata.get("title")
    heading = " ".join(title.split()) if isinstance(title, str) else ""
    return layout.finish(layout.pack_drafts([Unit(span)], "", heading))


def chunk_markdown(doc: Document, budget: Budget) -> list[Chunk]:
    layout = Layout(doc.text, doc.body_start_line, budget)
    if not _INK.search(doc.text, layout.body_at):
        return front_matter_chunks(doc, budget)
    blocks = parse_blocks(layout.lines, layout.first_line, layout.last_line, layout.tick)
    title = doc.metadata.get("title")
    root = " ".join(title.split()) if isinstance(title, str) else ""
    sections = glue_headings(build_sections(blocks, root))
    summary = page_summary(doc)
    drafts: list[Draft] = []
    for number, (group, path) in enumerate(_groups(sections, layout, summary)):
        context, heading = layout.label(" > ".join(path), "" if number else summary)
        span = layout.lines_span(group[0].first, group[-1].last)
        if span is None:
            continue
        if len(group) > 1:
            drafts.append(Draft(span.a, span.b, 0, context, heading))
            continue
        blocks = parse_blocks(layout.lines, group[0].first, group[0].last, layout.tick)
        units = (u for b in blocks if (u := _unit(layout, b)) is not None)
        packed = layout.pack_drafts(
            units, context, heading, language=doc.language, total=span.tokens
        )
        if number == 0 and len(packed) > 1:  # the summary is the page's first chunk's only
            plain = layout.label(" > ".join(path))[0]
            packed[1:] = [replace(d, context=plain) for d in packed[1:]]
        drafts.extend(packed)
    return layout.finish(drafts)


def page_summary(doc: Document) -> str:
    """The page's front-matter `description` (a string), which its first chunk embeds
    after the heading path; "" when it has none."""
    description = doc.metadata.get("description")
    return " ".join(description.split()) if isinstance(description, str) else ""


def _groups(
    sections: list[Section], layout: Layout, summary: str = ""
) -> Iterator[tuple[list[Section], tuple[str, ...]]]:
    """Runs of adjacent small sections that fit together, with their common path (the
    first run's context also holds `summary`)."""
    soft = layout.budget.max_tokens // MERGE_SHARE
    index = 0
    while index < len(sections):
        layout.tick()
        first = sections[index]
        group, path = [first], first.path
        span = _section_span(layout, first)
        lead = summary if index == 0 else ""
        index += 1
        if span is None:
            yield group, path
            continue
        a, b, tokens = span.a, span.b, span.tokens
        if layout.fits(tokens, a, b, layout.room(_context(layout, path, lead))):
            while index < len(sections) and tokens < soft:
                following = sections[index]
                more = _section_span(layout, following)
                if following.level < first.level or more is None:
                    break
                common = _common(path, following.path)
                if path and not common:
                    break  # siblings without a common ancestor keep their own headings
                room = layout.room(_context(layout, common, lead))
                if not layout.fits(tokens + more.tokens, a, more.b, room):
                    break
                group.append(following)
                path, b, tokens = common, more.b, tokens + more.tokens
                index += 1
        yield group, path


def _context(layout: Layout, path: tuple[str, ...], summary: str = "") -> str:
    return layout.label(" > ".join(path), summary)[0]


def _section_span(layout: Layout, section: Section) -> Span | None:
    return layout.lines_span(section.first, section.last)


def _unit(layout: Layout, block: Block) -> Unit | None:
    span = layout.lines_span(block.first, block.last, sticky=block.kind == "heading")
    if span is None:
        return None
    if block.kind != "list":
        return Unit(span)
    items = _list_items(layout.lines, block.first, block.last, block.level, layout.tick)
    return Unit(span, (p for a, b in items if (p := layout.lines_span(a, b)) is not None))
