"""`corpus.pdfscan`: every filter's decoder against its encoder, chains counted stage by
stage, the budgets, and the count of characters a content stream shows."""

from __future__ import annotations

import base64
import time
import zlib

import pytest

from chromasync.corpus.pages import Limits, Meter, Refused
from chromasync.corpus.pdfscan import _STAGES, Shown, measure_streams


def lzw_encode(data: bytes) -> bytes:
    """PDF's LZW with early change: what `_lzw` decodes."""
    table = {bytes([i]): i for i in range(256)}
    width, out, buffer, count = 9, bytearray(), 0, 0

    def put(code: int) -> None:
        nonlocal buffer, count
        buffer = (buffer << width) | code
        count += width
        while count >= 8:
            count -= 8
            out.append((buffer >> count) & 0xFF)

    put(256)  # a clear code first
    word = b""
    next_code = 258
    for byte in data:
        grown = word + bytes([byte])
        if grown in table:
            word = grown
            continue
        put(table[word])
        if next_code < 4096:
            table[grown] = next_code
            next_code += 1
            if next_code + 1 > (1 << width) and width < 12:
                width += 1
        word = bytes([byte])
    if word:
        put(table[word])
    put(257)
    if count:
        out.append((buffer << (8 - count)) & 0xFF)
    return bytes(out)


def rle_encode(data: bytes) -> bytes:
    out = bytearray()
    for at in range(0, len(data), 128):
        piece = data[at : at + 128]
        out += bytes([len(piece) - 1]) + piece
    return bytes(out + b"\x80")


SAMPLE = b"BT /F1 12 Tf (hello world) Tj ET\n" * 300


@pytest.mark.parametrize(
    ("name", "encoded"),
    [
        (b"FlateDecode", zlib.compress(SAMPLE)),
        (b"LZWDecode", lzw_encode(SAMPLE)),
        (b"RunLengthDecode", rle_encode(SAMPLE)),
        (b"ASCIIHexDecode", SAMPLE.hex().encode() + b">"),
        (b"ASCII85Decode", base64.a85encode(SAMPLE) + b"~>"),
    ],
)
def test_each_decoder_gives_back_the_data(name: bytes, encoded: bytes) -> None:
    pieces = [encoded[i : i + 1000] for i in range(0, len(encoded), 1000)]
    assert b"".join(_STAGES[name](iter(pieces), 1 << 30)) == SAMPLE


def _pdf(dictionary: bytes, data: bytes) -> bytes:
    return b"%PDF-1.7\n4 0 obj\n" + dictionary + b"\nstream\n" + data + b"\nendstream\nendobj\n"


def _meter(**limits: int) -> Meter:
    return Meter(Limits(**limits), time.monotonic)


def test_a_chain_is_counted_stage_by_stage() -> None:
    inner = zlib.compress(b" " * (4 << 20))
    data = _pdf(b"<< /Filter [/A85 /Fl] >>", base64.a85encode(inner) + b"~>")
    meter = _meter()
    measure_streams(data, meter)
    assert meter.inflated == len(inner) + (4 << 20)
    with pytest.raises(Refused, match="inflates past"):
        measure_streams(data, _meter(max_stream=2 << 20))
    with pytest.raises(Refused, match="inflates past"):
        measure_streams(data + data, _meter(max_inflated=8 << 20))


def test_an_image_may_inflate_further_than_other_streams() -> None:
    pixels = zlib.compress(bytes(3 << 20))
    image = _pdf(b"<< /Type /XObject /Subtype /Image /Filter /FlateDecode >>", pixels)
    measure_streams(image, _meter(max_stream=1 << 20))
    with pytest.raises(Refused):
        measure_streams(image.replace(b"/Image", b"/Form"), _meter(max_stream=1 << 20))


def test_what_an_image_shows_counts_too() -> None:
    """A page's contents calling themselves an image still count their text."""
    text = b"(" + b"a" * 5000 + b") Tj\n"
    stream = zlib.compress(text * 200)
    data = _pdf(b"<< /Subtype /Image /Filter /FlateDecode >>", stream)
    with pytest.raises(Refused, match="shows over"):
        measure_streams(data, _meter(max_page_chars=100_000))
    measure_streams(data, _meter(max_page_chars=2_000_000))


def _shown(data: bytes, step: int) -> int:
    shown = Shown(1 << 40, 1 << 40)
    for at in range(0, len(data), step):
        shown.feed(data[at : at + step])
    return shown.total


@pytest.mark.parametrize("step", [1, 2, 3, 5, 64, 100_000])
def test_shown_counts_the_operands_of_text_operators(step: int) -> None:
    content = (
        b"BT /F1 12 Tf (Hello) Tj [(ab) -120 (c\\)d)] TJ <00410042> Tj (x) 5 0 Td "
        b"(not shown) BDC (a(b)c)Tj <<>> (q)' T (z) Tx (y)TJ ET"
    )
    assert _shown(content, step) == 5 + 2 + 4 + 4 + 5 + 1 + 1


def test_operators_are_counted() -> None:
    Shown(1 << 40, 1200).feed(b"0 0 m 1 1 l S\n" * 400)
    with pytest.raises(Refused, match="operators"):
        Shown(1 << 40, 1000).feed(b"0 0 m 1 1 l S\n" * 400)
