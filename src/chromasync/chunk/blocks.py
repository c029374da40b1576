"""A chunk's text as a reader reads it: prose paragraphs and the blocks between.

Design notes: docs/internals.md, `chunk/blocks.py`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Literal

BlockKind = Literal["code", "list", "table"]

BLOCK_MAX_LINES = 24
BLOCK_MAX_CHARS = 900
#: Front matter longer than this many lines is not taken for front matter.
FRONT_MATTER_MAX_LINES = 200

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
_SHORTCODE = re.compile(r"^\s*\{\{[<%]\s*(/?)([\w-]+)([^}]*)[%>]\}\}\s*$")
_CODE_SHORTCODES = frozenset({"code", "code-toggle", "highlight"})
_SHORTCODE_LANG = re.compile(r"""\blang\s*=\s*["']?([\w+#.-]+)""")
_SUMMARY_LINE = re.compile(r"^(?:title|description|linkTitle)\s*:")
_YAML_KEY = re.compile(r"^[\w\"'-]+\s*:(?:\s|$)")
_LINK_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*\S+")
_BARE_URL = re.compile(r"^\s*<?(?:https?|ftp)://\S+>?\s*$")
_ADMONITION = re.compile(r"^\s*>\s*\[![A-Za-z]+\]")
_SKIP = re.compile(r"^\s*(?:#{1,6}\s|\||<[a-zA-Z/!]|[-=*_]{3,}\s*$)")
_LIST_ITEM = re.compile(r"^\s{0,6}(?:[-*+]|\d{1,3}[.)])\s+\S")
_QUOTE_MARK = re.compile(r"^[ \t]*>[ \t]?", re.MULTILINE)
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)+\|?\s*$")
#: Inline links: [words](target), [words][ref], [words][] -> words.
_INLINE_LINK = re.compile(
    r"!?\[([^\]\n]{1,200})\](?:\([^)\s]{0,500}(?:\s+\"[^\"]*\")?\)|\[[^\]\n]{0,200}\])"
)


@dataclass(frozen=True, slots=True)
class Prose:
    """A paragraph at character `offset` of the text."""

    offset: int
    text: str


@dataclass(frozen=True, slots=True)
class Block:
    """A code block, list or table at character `offset`; `first_line`/`last_line` count
    the text's lines from 0; `text` is what an answer quotes (code without its fences)."""

    kind: BlockKind
    text: str
    lang: str
    offset: int
    end: int  # the character offset just past the block's last line
    first_line: int
    last_line: int


Segment = Prose | Block


#: Lines of a code block the terminal shows under a hit's prose.
VIEW_CODE_LINES = 8


def reading_view(text: str) -> tuple[str, Block | None]:
    """A hit as the terminal shows it: its prose (headings' words included) on one line,
    links as their words, and its first code block kept apart (None when it has none); a
    text with neither (a body-less page's front matter) on one line as it is."""
    prose: list[str] = []
    code: Block | None = None
    for part in segment(text):
        if isinstance(part, Prose):
            unquoted = _QUOTE_MARK.sub("", part.text)
            prose.append(inline_text(" ".join(unquoted.split())))
        elif part.kind == "code":
            code = code or part
        else:
            prose.append(inline_text(" ".join(part.text.split())))
    if not prose and code is None:  # a body-less page's front matter: shown as it is
        prose.append(" ".join(text.split()))
    return " ".join(prose), code


def code_lines(block: Block, limit: int = VIEW_CODE_LINES) -> list[str]:
    """The block's first `limit` lines (a last ``…`` when there are more)."""
    lines = block.text.splitlines()
    return lines[:limit] + (["…"] if len(lines) > limit else [])


def inline_text(text: str) -> str:
    """`text` with Markdown links reduced to their words (``[the docs](url)`` -> the docs)."""
    return _INLINE_LINK.sub(lambda m: m.group(1), text)


def _cut_block(lines: list[str]) -> str:
    kept: list[str] = []
    size = 0
    for line in lines:
        if len(kept) >= BLOCK_MAX_LINES or size + len(line) > BLOCK_MAX_CHARS:
            kept.append("…")
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept).strip("\n")


def _front_matter_end(lines: list[str]) -> int:
    """The index of the first line after front matter at the very start (0 when none): a
    fenced block, or an excerpt of one (a body-less page's chunk, `chunk.markdown.
    front_matter_chunks`): a `title:` or `description:` line, then only YAML `key: value`
    lines and indented continuations, up to a blank line or the end of the text."""
    if lines and _SUMMARY_LINE.match(lines[0]):
        end = 1
        while end < min(len(lines), FRONT_MATTER_MAX_LINES) and lines[end].strip():
            if not (_YAML_KEY.match(lines[end]) or lines[end][:1] in " \t"):
                return 0
            end += 1
        return end if end >= len(lines) or not lines[end].strip() else 0
    if not lines or lines[0].strip() not in ("---", "+++"):
        return 0
    fence = lines[0].strip()
    for i in range(1, min(len(lines), FRONT_MATTER_MAX_LINES)):
        if lines[i].strip() == fence:
            return i + 1
    return 0


def _not_prose(line: str) -> bool:
    stripped = line.strip()
    return (
        not stripped
        or not any(c.isalpha() for c in stripped)
        or bool(_SKIP.match(line))
        or bool(_LINK_DEF.match(line))
        or bool(_BARE_URL.match(line))
        or bool(_ADMONITION.match(line))
        or bool(_SHORTCODE.match(line))
    )


def segment(text: str) -> list[Segment]:
    """The text's prose paragraphs and blocks, in order (see the module docstring)."""
    lines = text.splitlines(keepends=True)
    starts = list(itertools.accumulate(map(len, lines), initial=0))  # and the text's end
    bare = [line.rstrip("\r\n") for line in lines]
    out: list[Segment] = []
    prose_from = -1

    def close_prose(i: int) -> None:
        nonlocal prose_from
        if prose_from >= 0:
            out.append(Prose(starts[prose_from], "".join(lines[prose_from:i])))
            prose_from = -1

    def add_block(kind: BlockKind, lo: int, hi: int, body: list[str], lang: str) -> None:
        content = _cut_block(body)
        if content.strip():
            out.append(Block(kind, content, lang, starts[lo], starts[hi + 1], lo, hi))

    i = _front_matter_end(bare)
    n = len(bare)
    while i < n:
        line = bare[i]
        fence = _FENCE.match(line)
        shortcode = _SHORTCODE.match(line)
        if fence:  # a fenced code block, to its closing fence (or the end of the text)
            close_prose(i)
            mark = fence.group(1)
            j = i + 1
            while j < n and not bare[j].strip().startswith(mark):
                j += 1
            add_block("code", i, min(j, n - 1), bare[i + 1 : j], fence.group(2))
            i = j + 1
            continue
        if shortcode and not shortcode.group(1) and shortcode.group(2) in _CODE_SHORTCODES:
            name = shortcode.group(2)
            close = re.compile(r"^\s*\{\{[<%]\s*/" + re.escape(name) + r"\s*[%>]\}\}\s*$")
            j = i + 1
            while j < n and not close.match(bare[j]) and j - i <= 400:
                j += 1
            if j < n and close.match(bare[j]):
                close_prose(i)
                found = _SHORTCODE_LANG.search(shortcode.group(3))
                lang = found.group(1) if found else ("toml" if name == "code-toggle" else "")
                add_block("code", i, j, bare[i + 1 : j], lang)
                i = j + 1
                continue
        if i + 1 < n and "|" in line and _TABLE_RULE.match(bare[i + 1]):
            close_prose(i)
            j = i + 2
            while j < n and bare[j].strip() and "|" in bare[j]:
                j += 1
            add_block("table", i, j - 1, bare[i:j], "")
            i = j
            continue
        if _LIST_ITEM.match(line):  # a list: prose (its items are sentences) and a block
            close_prose(i)
            j = i
            while j < n and bare[j].strip() and (_LIST_ITEM.match(bare[j]) or bare[j][:1] in " \t"):
                j += 1
            add_block("list", i, j - 1, bare[i:j], "")
            for k in range(i, j):
                if _not_prose(bare[k]):
                    close_prose(k)
                elif prose_from < 0:
                    prose_from = k
                if _LIST_ITEM.match(bare[k]):  # each item starts a paragraph of its own
                    close_prose(k)
                    prose_from = k
            close_prose(j)
            i = j
            continue
        if _not_prose(line):
            close_prose(i)
        elif prose_from < 0:
            prose_from = i
        i += 1
    close_prose(n)
    return out


__all__ = [
    "Block",
    "BlockKind",
    "Prose",
    "Segment",
    "code_lines",
    "inline_text",
    "reading_view",
    "segment",
]
