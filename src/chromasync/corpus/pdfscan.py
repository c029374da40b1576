"""A PDF's streams measured before PDFium opens the file: decompression bombs are refused.

Design notes: docs/internals.md, `corpus/pdfscan.py`.
"""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Callable, Iterable, Iterator

from .pages import Meter, Refused

_PIECE = 64 * 1024
_STREAM = re.compile(rb"(?<!end)stream(?:\r\n|\n|\r)")
_FILTER = re.compile(rb"/Filter\s*(\[[^\]]*\]|/[^\s/\[\]<>()]+)")
_NAME = re.compile(rb"/([^\s/\[\]<>()]+)")
_LENGTH = re.compile(rb"/Length\s+(\d+)(?!\s+\d+\s+R)")
_ENDSTREAM = re.compile(rb"\s*endstream")
_IN_STRING = re.compile(rb"[()\\]")
_OUTSIDE = re.compile(rb"[(<\[\]'\"T]")  # a T counts when j or J follows
_IMAGE = re.compile(rb"/Subtype\s*/Image\b")
#: Content operators that make PDFium build or keep something (paths, states, text, forms).
_OPS = re.compile(rb"\s[mlcvyhrSsfFBbnWDqQgBET][a-zA-Z*]?(?=\s)")  # one or two letters
_ALIASES = {
    b"Fl": b"FlateDecode",
    b"LZW": b"LZWDecode",
    b"RL": b"RunLengthDecode",
    b"AHx": b"ASCIIHexDecode",
    b"A85": b"ASCII85Decode",
}
#: How far back from its `stream` keyword a stream's dictionary is looked for.
_DICT_REACH = 64 * 1024


def measure_streams(data: bytes, meter: Meter) -> None:
    """Inflate every stream of `data` through its filters, counting what each stage puts
    out against the stream and file budgets (`Refused("too-large")` past one); the output
    is dropped as it comes."""
    view = memoryview(data)
    limits = meter.limits
    for number, match in enumerate(_STREAM.finditer(data)):
        if number % 64 == 0:
            meter.tick()
        start = match.end()
        head = _dictionary(data, match.start())
        filters = _filters(head)
        if not filters:
            continue
        raw = view[start : _data_end(data, head, start)]
        cap = limits.max_image if _IMAGE.search(head) else limits.max_stream
        size = 0

        def count(n: int, at: int = start, cap: int = cap) -> None:
            nonlocal size
            size += n
            meter.inflate(n)
            if size > cap:
                raise Refused(
                    "too-large",
                    f"a stream at byte {at} inflates past {cap} bytes (the limit for one stream)",
                )

        shown = Shown(limits.max_page_chars, limits.max_page_ops)
        for pieces, piece in enumerate(_decode(_pieces(raw), filters, cap, count)):
            if pieces % 16 == 15:
                meter.tick()  # the time budget, within a stream too
            shown.feed(piece)
        meter.show(shown.total)


class Shown:
    """Counts the characters a decoded stream shows: the bytes of the strings that are the
    operands of `Tj`, `TJ`, `'` and `"` (half the digits of a hex string), found by a
    scanner that keeps its state from piece to piece; and its operators that make PDFium
    build an object or keep a state (`_OPS`: paths, painting, `q`, forms, text), at most
    `max_ops`. PDFium keeps about 200 bytes for
    each character shown on a page once its text is asked for, so a stream showing more
    than `cap` is refused before PDFium reads it. A string counts only when the operator
    follows it (or its array) with nothing but whitespace between: noise in binary
    streams (fonts, images) does not add up."""

    def __init__(self, cap: int, max_ops: int) -> None:
        self.cap = cap
        self.max_ops = max_ops
        self.ops = 0
        self.total = 0
        self.depth = 0  # inside a literal string: its parenthesis depth
        self.length = 0  # bytes of the string being read, from earlier pieces
        self.hex = False
        self.array: int | None = None  # string bytes of an open [ ... ] array
        self.pending = 0  # string bytes waiting for their operator
        self.ready = False  # the bytes since the last string or array were whitespace
        self.skip = False  # a backslash ended the last piece, inside a string
        self.tail = b""  # a "T" that ended the last piece

    def feed(self, piece: bytes) -> None:
        self.ops += len(_OPS.findall(piece))
        if self.ops > self.max_ops:
            raise Refused("too-large", f"a stream holds over {self.max_ops} operators (the limit)")
        if self.tail and piece[:1] in (b"j", b"J"):
            self._operator()
            piece = piece[1:]
        self.tail = piece[-1:] if piece.endswith(b"T") else b""
        start = 0  # where the current literal string or hex string began in this piece
        last = 0  # where the bytes after the last close begin
        at = 1 if self.skip else 0
        self.skip = False
        size = len(piece)
        while at < size:
            if self.depth:  # inside a literal string: only ( ) and \\ matter
                match = _IN_STRING.search(piece, at)
                if match is None:
                    break
                at = match.start()
                byte = piece[at]
                if byte == 0x5C:  # a backslash escapes the next byte
                    self.skip = at + 1 >= size
                    at += 2
                    continue
                self.depth += 1 if byte == 0x28 else -1
                at += 1
                if not self.depth:
                    self._string(self.length + at - 1 - start)
                    last = at
                continue
            if self.hex:
                found = piece.find(b">", at)
                if found < 0:
                    break
                self.hex = False
                self._string((self.length + found - start) // 2)
                at = last = found + 1
                continue
            match = _OUTSIDE.search(piece, at)
            if match is None:
                break
            at = match.start()
            token: bytes = match[0]
            if token == b"T":
                if piece[at + 1 : at + 2] not in (b"j", b"J"):
                    at += 1
                    continue
                token = b"Tj"
            if self.ready and piece[last:at].strip():
                self.ready, self.pending = False, 0
            if token == b"(":
                self.depth, self.length, start = 1, 0, at + 1
            elif token == b"<":
                if piece[at + 1 : at + 2] != b"<":
                    self.hex, self.length, start = True, 0, at + 1
                else:
                    at += 1
            elif token == b"[":
                self.array = 0
                self.ready = False
            elif token == b"]":
                if self.array is not None:
                    self.pending, self.array, self.ready = self.array, None, True
                    last = at + 1
            elif self.ready and not piece[last:at].strip():
                self._operator()
            else:
                self.ready, self.pending = False, 0
            at += len(token)
        if self.depth or self.hex:
            self.length += size - start
        elif self.ready and piece[last : size - len(self.tail)].strip():
            self.ready, self.pending = False, 0

    def _string(self, size: int) -> None:
        self.length = 0
        if self.array is not None:
            self.array += size
        else:
            self.pending, self.ready = size, True

    def _operator(self) -> None:
        self.total += self.pending
        self.pending, self.ready = 0, False
        if self.total > self.cap:
            raise Refused(
                "too-large",
                f"a stream shows over {self.cap} characters (the limit for one stream)",
            )


def _dictionary(data: bytes, stream_at: int) -> bytes:
    lo = max(0, stream_at - _DICT_REACH)
    found = data.rfind(b"obj", lo, stream_at)
    return data[(found + 3 if found >= 0 else lo) : stream_at]


def _data_end(data: bytes, head: bytes, start: int) -> int:
    length = _LENGTH.search(head)
    if length is not None:
        end = start + int(length[1])
        if end <= len(data) and _ENDSTREAM.match(data, end):
            return end
    found = data.find(b"endstream", start)
    return len(data) if found < 0 else found


def _filters(head: bytes) -> list[bytes]:
    found = _FILTER.search(head)
    if found is None:
        return []
    return [_ALIASES.get(name, name) for name in _NAME.findall(found[1])]


def _pieces(raw: memoryview) -> Iterator[bytes]:
    for at in range(0, len(raw), _PIECE):
        yield bytes(raw[at : at + _PIECE])


def _decode(
    chunks: Iterable[bytes], filters: list[bytes], cap: int, count: Callable[[int], None]
) -> Iterable[bytes]:
    """The last stage's output; every stage's output goes through `count` as it comes."""
    stream: Iterable[bytes] = chunks
    for name in filters:
        stage = _STAGES.get(name)
        if stage is None:
            break  # an image codec, Crypt or unknown: PDFium decodes it only to render
        stream = _counted(stage(stream, cap), count)
    return stream


def _counted(pieces: Iterable[bytes], count: Callable[[int], None]) -> Iterator[bytes]:
    for piece in pieces:
        count(len(piece))
        yield piece


def _flate(chunks: Iterable[bytes], cap: int) -> Iterator[bytes]:
    inflater = zlib.decompressobj()
    try:
        for chunk in chunks:
            data = chunk
            while data:
                out = inflater.decompress(data, _PIECE)
                if out:
                    yield out
                if inflater.eof:
                    return
                data = inflater.unconsumed_tail
        tail = inflater.flush()
        if tail:
            yield tail
    except zlib.error:
        return  # PDFium keeps what decoded before the error


def _lzw(chunks: Iterable[bytes], cap: int) -> Iterator[bytes]:
    """PDF's LZW (8-bit, codes of 9 to 12 bits, early change), 256 clears, 257 ends."""
    table: list[bytes] = [bytes([i]) for i in range(256)] + [b"", b""]
    width, buffer, held = 9, 0, 0
    previous: bytes | None = None
    out = bytearray()
    for chunk in chunks:
        for byte in chunk:
            buffer = (buffer << 8) | byte
            held += 8
            while held >= width:
                held -= width
                code = (buffer >> held) & ((1 << width) - 1)
                buffer &= (1 << held) - 1
                if code == 256:
                    del table[258:]
                    width, previous = 9, None
                    continue
                if code == 257:
                    yield bytes(out)
                    return
                if code < len(table) and (code < 256 or code > 257):
                    entry = table[code]
                    if previous is not None and len(table) < 4096:
                        table.append(previous + entry[:1])
                elif previous is not None and code == len(table):
                    entry = previous + previous[:1]
                    if len(table) < 4096:
                        table.append(entry)
                else:
                    yield bytes(out)
                    return  # a bad code: PDFium stops there too
                out += entry
                previous = entry
                if len(table) + 1 >= (1 << width) and width < 12:
                    width += 1
                if len(out) >= _PIECE:
                    yield bytes(out)
                    out.clear()
    if out:
        yield bytes(out)


def _gathered(chunks: Iterable[bytes], cap: int) -> bytes:
    """The whole input of a stage that is decoded at once (it never inflates much)."""
    data = bytearray()
    for chunk in chunks:
        data += chunk
        if len(data) > cap:
            raise Refused("too-large", f"a stream inflates past {cap} bytes")
    return bytes(data)


def _run_length(chunks: Iterable[bytes], cap: int) -> Iterator[bytes]:
    data = _gathered(chunks, cap)
    out = bytearray()
    at = 0
    while at < len(data):
        n = data[at]
        if n == 128:
            break
        if n < 128:
            out += data[at + 1 : at + 2 + n]
            at += n + 2
        else:
            out += data[at + 1 : at + 2] * (257 - n)
            at += 2
        if len(out) >= _PIECE:
            yield bytes(out)
            out.clear()
    if out:
        yield bytes(out)


def _ascii_hex(chunks: Iterable[bytes], cap: int) -> Iterator[bytes]:
    text = _gathered(chunks, cap).split(b">", 1)[0]
    digits = re.sub(rb"[^0-9A-Fa-f]", b"", text)
    if len(digits) % 2:
        digits += b"0"
    yield bytes.fromhex(digits.decode("ascii"))


def _ascii85(chunks: Iterable[bytes], cap: int) -> Iterator[bytes]:
    text = _gathered(chunks, cap).split(b"~>", 1)[0]
    text = re.sub(rb"\s+", b"", text).removeprefix(b"<~")
    try:
        yield base64.a85decode(text)
    except ValueError:
        return


_STAGES = {
    b"FlateDecode": _flate,
    b"LZWDecode": _lzw,
    b"RunLengthDecode": _run_length,
    b"ASCIIHexDecode": _ascii_hex,
    b"ASCII85Decode": _ascii85,
}

__all__ = ["measure_streams"]
