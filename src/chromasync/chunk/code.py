"""Source code: one chunk per top-level declaration, found with tree-sitter.

Design notes: docs/internals.md, `chunk/code.py`.
"""

from __future__ import annotations

import bisect
import importlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..records import Chunk, Document
from . import Budget
from .languages import (
    COMMENTS,
    GRAMMARS,
    LANGUAGES,
    LanguageSpec,
    Node,
    declaration_name,
    members,
    top_level,
)
from .layout import CONTEXT_SHARE, Draft, Layout, Span, Unit
from .text import paragraph_drafts

log = logging.getLogger(__name__)

_PARSERS: dict[str, Any] = {}
#: Containers nested deeper than this are packed by lines instead of opened at their members:
#: bounds the recursion (and the qualified names, which grow with the depth) on hostile input.
MAX_MEMBER_DEPTH = 24
#: A file whose lines nest deeper than this (in indentation levels) is not given to
#: tree-sitter: the YAML grammar's scanner crashes the process past 255 levels.
MAX_INDENT_DEPTH = 128
#: A file longer than this (characters) is split by lines without tree-sitter: its tree
#: takes about 55 bytes a byte of source (113 MB for 2 MiB of Python statements).
MAX_PARSE_CHARS = 512 * 1024


@dataclass(frozen=True, slots=True)
class Item:
    """Lines `first`..`last` holding one top-level node (or several on shared lines)."""

    first: int
    last: int
    name: str | None = None  # qualified name when the node is a declaration
    node: Node | None = None
    declaration: bool = False  # gets a chunk of its own
    comment: bool = False
    header: bool = False  # a container's lines before its first member


def chunk_code(doc: Document, budget: Budget) -> list[Chunk]:
    """Code: one chunk per declaration by the language's tree-sitter grammar (`LANGUAGES`);
    a language without one (Vue: no grammar package is installed) or a parse error is packed
    by paragraphs, at blank lines."""
    layout = Layout(doc.text, doc.body_start_line, budget)
    drafts: list[Draft] | None = None
    spec = LANGUAGES.get(doc.language or "")
    if spec is not None:
        drafts = _declaration_drafts(layout, spec, doc)
    if drafts is None:
        drafts = paragraph_drafts(layout, doc.language)
    return layout.finish(drafts)


def parser_for(grammar: str) -> Any | None:
    """A tree-sitter parser for an installed grammar, or None when it cannot be loaded."""
    if grammar not in _PARSERS:
        try:
            _PARSERS[grammar] = _load_parser(grammar)
        except Exception as exc:  # noqa: BLE001 - any loading problem means "no grammar"
            log.warning(
                "tree-sitter grammar %r is unavailable (%s); splitting by lines", grammar, exc
            )
            _PARSERS[grammar] = None
    return _PARSERS[grammar]


def _load_parser(grammar: str) -> Any:
    if grammar not in GRAMMARS:
        raise LookupError(f"no grammar package is declared for {grammar!r}")
    module_name, function = GRAMMARS[grammar]
    from tree_sitter import Language, Parser

    module = importlib.import_module(module_name)
    return Parser(Language(getattr(module, function)()))


def _declaration_drafts(layout: Layout, spec: LanguageSpec, doc: Document) -> list[Draft] | None:
    parser = parser_for(spec.grammar)
    if parser is None:
        return None
    if len(doc.text) > MAX_PARSE_CHARS or indent_depth(layout.lines) > MAX_INDENT_DEPTH:
        log.debug("%s: too long or too deep for the parser; splitting by lines", doc.rel_path)
        return None
    source = doc.text.encode("utf-8")
    try:
        tree = parser.parse(source)
    except Exception as exc:  # noqa: BLE001 - a parser crash falls back, never fails
        log.warning("%s: tree-sitter parse failed (%s); splitting by lines", doc.rel_path, exc)
        return None
    root = tree.root_node
    if root.type == "ERROR" or any(c.type == "ERROR" or c.is_missing for c in root.children):
        log.debug("%s: syntax errors at the top level; splitting by lines", doc.rel_path)
        return None
    nodes = top_level(root, spec)
    if not nodes:
        return None
    chunker = _CodeChunker(layout, spec, source, doc.language)
    items = chunker.items(nodes, None, layout.first_line, layout.last_line)
    return chunker.emit(items, None)


def indent_depth(lines: Iterable[str]) -> int:
    """The deepest stack of increasing indentations among `lines` (an indent scanner's)."""
    stack = [0]
    deepest = 0
    for line in lines:
        stripped = line.lstrip(" \t")
        if not stripped:
            continue
        indent = len(line) - len(stripped)
        while indent < stack[-1]:
            stack.pop()
        if indent > stack[-1]:
            stack.append(indent)
            deepest = max(deepest, len(stack) - 1)
    return deepest


def _lines(node: Node) -> tuple[int, int]:
    start_row = node.start_point[0]
    end_row, end_column = node.end_point
    last = end_row + 1 if end_column > 0 or end_row == start_row else end_row
    return start_row + 1, max(last, start_row + 1)


class _CodeChunker:
    def __init__(
        self, layout: Layout, spec: LanguageSpec, source: bytes, language: str | None
    ) -> None:
        self.layout = layout
        self.spec = spec
        self.source = source
        self.language = language
        self.depth = 0  # containers opened around the current item

    def items(
        self, nodes: list[Node], prefix: str | None, first: int, last: int, container: bool = False
    ) -> list[Item]:
        """Items of `nodes` within lines `first`..`last`, covering every non-blank line."""
        items: list[Item] = []
        for node in nodes:
            self.layout.tick()
            start, end = _lines(node)
            start, end = max(start, first), min(end, last)
            if items and start <= items[-1].last:
                if end > items[-1].last:
                    items[-1] = replace(items[-1], last=end, declaration=False, node=None)
                continue
            if start > end:
                continue
            name = declaration_name(node, self.spec, self.source)
            qualified = f"{prefix}.{name}" if prefix and name else name
            items.append(
                Item(
                    start,
                    end,
                    qualified,
                    node,
                    declaration=name is not None and end > start and not self.spec.data,
                    comment=node.type in COMMENTS,
                )
            )
        items = self._attach_comments(items)
        return self._cover(items, first, last, container)

    @staticmethod
    def _attach_comments(items: list[Item]) -> list[Item]:
        out: list[Item] = []
        for item in items:
            if item.declaration:
                start = item.first
                while out and out[-1].comment and out[-1].last + 1 == start:
                    start = out.pop().first
                item = replace(item, first=start)
            out.append(item)
        return out

    def _cover(self, items: list[Item], first: int, last: int, container: bool) -> list[Item]:
        """Give non-blank lines that no node holds (stray tokens) to a neighbouring item."""
        layout = self.layout
        if not items:
            span = layout.lines_span(first, last)
            return [Item(first, last)] if span is not None else []
        out: list[Item] = []
        previous_last = first - 1
        for item in items:
            gap = layout.lines_span(previous_last + 1, item.first - 1)
            if gap is not None:
                if out:
                    out[-1] = replace(out[-1], last=item.first - 1)
                elif item.declaration:
                    out.append(Item(first, item.first - 1, header=container))
                else:
                    item = replace(item, first=first, header=container)
            out.append(item)
            previous_last = item.last
        if layout.lines_span(previous_last + 1, last) is not None:
            out[-1] = replace(out[-1], last=last)
        return out

    def emit(self, items: list[Item], owner: str | None) -> list[Draft]:
        """Drafts for items: declarations alone, the rest packed between them."""
        drafts: list[Draft] = []
        pending: list[Item] = []
        between = False
        for item in items:
            self.layout.tick()
            if not item.declaration:
                pending.append(item)
                continue
            lead = self._lead(pending, between)
            between = True
            if lead is None:
                drafts.extend(self._pack(pending, owner))
            pending = []
            drafts.extend(self._declaration(item, owner, lead))
        drafts.extend(self._pack(pending, owner))
        return drafts

    def _lead(self, pending: list[Item], between: bool) -> Span | None:
        """A small container header, or comments between declarations, to be glued to the
        declaration after them."""
        if not pending:
            return None
        if not pending[0].header and not (between and all(i.comment for i in pending)):
            return None
        span = self.layout.lines_span(pending[0].first, pending[-1].last, sticky=True)
        small = self.layout.budget.max_tokens // CONTEXT_SHARE
        return span if span is not None and span.tokens <= small else None

    def _declaration(self, item: Item, owner: str | None, lead: Span | None) -> list[Draft]:
        layout = self.layout
        span = layout.lines_span(item.first, item.last)
        if span is None:
            return []
        context = layout.label(item.name or "")[0] if owner else ""
        room = layout.room(context)
        start = lead.a if lead is not None else span.a
        tokens = span.tokens + (lead.tokens if lead is not None else 0)
        if layout.fits(tokens, start, span.b, room):
            return [Draft(start, span.b, 0, context, "", item.name, self.language)]
        drafts: list[Draft] = []
        if lead is not None and layout.fits(span.tokens, span.a, span.b, room):
            drafts.append(Draft(lead.a, lead.b, 0, context, "", owner, self.language))
            return [*drafts, Draft(span.a, span.b, 0, context, "", item.name, self.language)]
        inner = self._members(item, item.name)
        if inner is not None:
            if lead is not None:
                drafts.append(Draft(lead.a, lead.b, 0, context, "", owner, self.language))
            return drafts + inner
        context, _ = layout.label(item.name or "")
        units = [Unit(span)] if lead is None else [Unit(lead), Unit(span)]
        return layout.pack_drafts(units, context, "", item.name, self.language)

    def _members(self, item: Item, owner: str | None) -> list[Draft] | None:
        """Drafts of a container's members, or None when `item` has none."""
        if item.node is None or self.depth >= MAX_MEMBER_DEPTH:
            return None
        nodes = members(item.node, self.spec)
        if not nodes:
            return None
        inner = self.items(nodes, owner, item.first, item.last, container=True)
        if not inner:
            return None
        self.depth += 1
        try:
            return self.emit(inner, owner)
        finally:
            self.depth -= 1

    def _pack(self, items: list[Item], owner: str | None) -> list[Draft]:
        """Pack consecutive non-declaration items; an oversized container is opened."""
        layout = self.layout
        context = layout.label(owner)[0] if owner else ""
        room = layout.room(context)
        drafts: list[Draft] = []
        run: list[tuple[Item, Unit]] = []
        for item in items:
            span = layout.lines_span(item.first, item.last)
            if span is None:
                continue
            if not layout.fits(span.tokens, span.a, span.b, room) and item.node is not None:
                inner = self._members(item, item.name or owner)
                if inner is not None:
                    drafts.extend(self._pack_run(run, context, owner))
                    run = []
                    drafts.extend(inner)
                    continue
            run.append((item, Unit(span)))
        drafts.extend(self._pack_run(run, context, owner))
        return drafts

    def _pack_run(
        self, run: list[tuple[Item, Unit]], context: str, owner: str | None
    ) -> list[Draft]:
        if not run:
            return []
        drafts = self.layout.pack_drafts([u for _, u in run], context, "", owner, self.language)
        if owner is not None or not self.spec.data:
            return drafts
        # the run's spans are disjoint and in order: bisect for those a draft overlaps
        starts = [u.span.a for _, u in run]
        ends = [u.span.b for _, u in run]
        out: list[Draft] = []
        for draft in drafts:
            lo, hi = bisect.bisect_right(ends, draft.a), bisect.bisect_left(starts, draft.b)
            out.append(replace(draft, symbol=run[lo][0].name if hi - lo == 1 else None))
        return out
