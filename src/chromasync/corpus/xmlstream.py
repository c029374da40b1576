"""An Office XML part parsed as a stream, with the standard library only: expat feeding an
ElementTree `TreeBuilder`, each element reported when it ends, with the elements it is in.

Design notes: docs/internals.md, `corpus/xmlstream.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING
from xml.etree.ElementTree import TreeBuilder
from xml.parsers import expat

from .pages import Refused

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

#: Elements nested deeper than this are refused (libxml2's limit without XML_PARSE_HUGE).
MAX_DEPTH = 256
#: The most characters of one text (between two tags), as libxml2 had it.
MAX_TEXT = 10_000_000
#: The most bytes of a tag, comment or declaration expat holds before it ends.
MAX_TOKEN = 10_000_000
#: Distinct names whose `{namespace}local` form is kept (past them, made each time).
_NAMES = 10_000


class PullParser:
    """`feed` a part piece by piece, `read_events` after each piece, `close` at the end.

    `read_events` yields `(element, ancestors)`; `ancestors` is one list the parser
    changes as it goes on: read it before taking the next event, do not keep it."""

    __slots__ = ("_events", "_expat", "_fed", "_open", "_pending", "_waited", "_waiting")

    def __init__(self) -> None:
        # intern=None: expat keeps no table of every name seen; `names` is bounded.
        parser = expat.ParserCreate(namespace_separator="}", intern=None)
        parser.buffer_text = True
        builder = TreeBuilder()
        names: dict[str, str] = {}
        events: list[Element | None] = []  # a start is its element, an end None
        depth = text = 0

        def tag(raw: str) -> str:
            fixed = "{" + raw if "}" in raw else raw
            if len(names) < _NAMES:
                names[raw] = fixed
            return fixed

        def start(raw: str, attrs: dict[str, str]) -> None:
            nonlocal depth, text
            depth += 1
            text = 0
            if depth > MAX_DEPTH:
                raise Refused("corrupt", f"elements nested over {MAX_DEPTH} deep")
            if attrs:
                attrs = {names.get(k) or tag(k): v for k, v in attrs.items()}
            events.append(builder.start(names.get(raw) or tag(raw), attrs))

        def end(raw: str) -> None:
            nonlocal depth, text
            depth -= 1
            text = 0
            builder.end(names.get(raw) or tag(raw))
            events.append(None)

        def data(chunk: str) -> None:
            nonlocal text
            text += len(chunk)
            if text > MAX_TEXT:
                raise Refused("corrupt", f"a text of over {MAX_TEXT} characters")
            builder.data(chunk)

        def refuse(*_: object) -> None:
            raise Refused("corrupt", "a DTD (<!DOCTYPE>): Office XML has none")

        parser.StartElementHandler = start
        parser.EndElementHandler = end
        parser.CharacterDataHandler = data
        parser.StartDoctypeDeclHandler = refuse
        parser.EntityDeclHandler = refuse
        self._expat = parser
        self._events = events
        self._open: list[Element] = []
        self._fed = self._pending = self._waited = 0
        self._waiting: list[bytes] = []

    def feed(self, piece: bytes) -> None:
        """Parse `piece`; while a token is open, pieces wait until they are as long as it,
        or until it would pass `MAX_TOKEN` (expat parses an open token again from its start
        with each piece it is given: without the wait, a token of n bytes took n * n / 64 KiB
        bytes parsed)."""
        self._waiting.append(piece)
        self._waited += len(piece)
        if self._waited >= self._pending or self._pending + self._waited > MAX_TOKEN:
            self._parse(b"".join(self._waiting), False)

    def _parse(self, data: bytes, final: bool) -> None:
        self._waiting.clear()
        self._waited = 0
        self._fed += len(data)
        try:
            self._expat.Parse(data, final)
        except (LookupError, ValueError) as exc:  # an encoding Python or expat cannot read
            raise Refused("corrupt", f"{type(exc).__name__}: {exc}") from exc
        # Outside a handler, expat's index is just past its last whole token.
        self._pending = self._fed - self._expat.CurrentByteIndex
        if self._pending > MAX_TOKEN:
            raise Refused("corrupt", f"a tag or declaration of over {MAX_TOKEN} bytes")

    def read_events(self) -> Iterator[tuple[Element, list[Element]]]:
        """(element, its ancestors) of each element that ended since the last read."""
        batch = self._events.copy()
        self._events.clear()
        ancestors = self._open
        for item in batch:
            if item is None:
                yield ancestors.pop(), ancestors
            else:
                ancestors.append(item)

    def close(self) -> None:
        """The end of the part: expat's `ExpatError` if it is cut short."""
        self._parse(b"".join(self._waiting), True)


def children(element: Element, *tags: str) -> Iterator[Element]:
    """The children of `element` whose tag is one of `tags`, in order."""
    return (child for child in element if child.tag in tags)


__all__ = ["MAX_DEPTH", "MAX_TEXT", "MAX_TOKEN", "PullParser", "children"]
