"""Helpers for the chunker tests: documents as ingest reads them, and the chunk invariants."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from chromasync.chunk import Budget
from chromasync.corpus.read import decode_document
from chromasync.embed.tokens import TokenMeter, default_token_meter
from chromasync.records import Chunk, Document, FileStat


def document(text: str, name: str = "doc.md") -> Document:
    """`text` decoded exactly as ingest decodes a file called `name`."""
    raw = text.encode("utf-8")
    outcome = decode_document(FileStat(name, f"/nowhere/{name}", len(raw), 0), raw, "0" * 64)
    assert outcome.document is not None, outcome.skip
    return outcome.document


def minilm(max_tokens: int = 254, max_chars: int = 0) -> Budget:
    return Budget(max_tokens, default_token_meter(), max_chars)


class CharMeter:
    """A meter that is not additive: a word piece per four characters (ceil), ends stripped.

    Joining two texts can cost more than the sum of their counts, so chunkers that estimate
    by adding must check their chunks with the meter itself.
    """

    def count(self, text: str) -> int:
        return -(-len(text.strip()) // 4)

    def cut(self, text: str, max_tokens: int) -> int:
        lead = len(text) - len(text.lstrip())
        return max(1, min(len(text), lead + max(max_tokens, 1) * 4))


class WordMeter:
    """An additive meter without `starts`: one word piece per whitespace-separated word."""

    def count(self, text: str) -> int:
        return len(text.split())

    def cut(self, text: str, max_tokens: int) -> int:
        words = 0
        position = 0
        length = len(text)
        while position < length:
            while position < length and text[position].isspace():
                position += 1
            if position >= length:
                break
            if words == max(max_tokens, 1):
                return position
            while position < length and not text[position].isspace():
                position += 1
            words += 1
        return max(length, 1)


_HEADING_LINE = re.compile(r"^ {0,3}(#{1,6}[ \t]|(=+|-+)[ \t]*$)")


def _leads(doc: Document, lines: Sequence[str]) -> bool:
    """Lines that may precede the first piece of a long line in one chunk: Markdown
    headings (and blank lines); in code, the glued lead (comments, a container header)."""
    if doc.kind != "markdown":
        return True
    # A setext heading's text is a paragraph: every line of a run of non-blank lines that
    # ends with an underline belongs to the heading (CommonMark allows several).
    setext = [False] * len(lines)
    for i in range(len(lines) - 2, -1, -1):
        underlined = bool(re.match(r"^ {0,3}(=+|-+)[ \t]*$", lines[i + 1]))
        setext[i] = bool(lines[i].strip()) and (underlined or setext[i + 1])
    return all(
        not line.strip() or _HEADING_LINE.match(line) or setext[i] for i, line in enumerate(lines)
    )


def assert_chunks_valid(doc: Document, chunks: Sequence[Chunk], budget: Budget) -> None:
    """The invariants of `chromasync.chunk` (see its docstring), checked one by one."""
    meter: TokenMeter = budget.meter
    text = doc.text
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    position = starts[doc.body_start_line - 1]
    if not text[position:].strip():  # a body-less page: its front matter's title lines
        for chunk in chunks:
            excerpt = "\n".join(text.split("\n")[chunk.start_line - 1 : chunk.end_line])
            assert chunk.text == excerpt and chunk.end_line < doc.body_start_line
            assert meter.count(chunk.embed_text) <= budget.max_tokens
        return
    previous: Chunk | None = None
    for index, chunk in enumerate(chunks):
        where = f"chunk {index} (lines {chunk.start_line}-{chunk.end_line})"
        assert chunk.text.strip(), f"{where} is blank"
        assert meter.count(chunk.embed_text) <= budget.max_tokens, f"{where} is over budget"
        assert len(chunk.text) <= budget.char_limit, f"{where} is over the character limit"
        assert chunk.context == "" or chunk.context.endswith("\n\n"), where
        if chunk.overlap:
            assert previous is not None and 0 < chunk.overlap < len(chunk.text), where
            assert previous.text.endswith(chunk.text[: chunk.overlap]), f"{where} overlap"
            at = position - chunk.overlap
        else:
            at = text.find(chunk.text, position)
            assert at >= 0, f"{where} is not an excerpt after the previous chunk"
            assert not text[position:at].strip(), f"{where}: text lost before it"
        assert text.startswith(chunk.text, at), f"{where} is not where it should be"
        end = at + len(chunk.text)
        assert bisect.bisect_right(starts, at) == chunk.start_line, f"{where} start_line"
        assert bisect.bisect_right(starts, end - 1) == chunk.end_line, f"{where} end_line"
        whole = at == starts[chunk.start_line - 1] and end == starts[chunk.end_line] - 1
        headed = at == starts[chunk.start_line - 1] and _leads(doc, chunk.text.split("\n")[:-1])
        assert whole or chunk.start_line == chunk.end_line or headed, f"{where}: not whole lines"
        position, previous = end, chunk
    assert not text[position:].strip(), "text lost after the last chunk"
    if text[starts[doc.body_start_line - 1] :].strip():
        assert chunks, "a document with a body gave no chunks"
