"""Decompression bombs built at test time, quickly: a deflate stream of one block repeated
(each copy after a full flush compresses to the same bytes), wrapped as a PDF's content
stream or as a zip member of a real DOCX or PPTX, with its checksums computed over what it
inflates to. A member may declare a size other than its real one (the lie of issue 30)."""

from __future__ import annotations

import hashlib
import io
import itertools
import struct
import zipfile
import zlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Deflated:
    raw: bytes  # raw deflate data (no zlib header)
    size: int  # bytes it inflates to
    crc32: int
    adler32: int


def deflate_repeat(
    head: bytes, block: bytes, repeat: int, tail: bytes, checksum: str = "crc32"
) -> Deflated:
    """`head + block * repeat + tail`, deflated without ever holding it whole, with the one
    checksum its container needs (`crc32` for a zip, `adler32` for zlib; the other is 0)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = packer.compress(head) + packer.flush(zlib.Z_FULL_FLUSH)
    copy = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    last = packer.compress(tail) + packer.flush()
    add = zlib.crc32 if checksum == "crc32" else zlib.adler32
    value = add(head)
    for _ in range(repeat):
        value = add(block, value)
    value = add(tail, value)
    crc, adler = (value, 0) if checksum == "crc32" else (0, value)
    size = len(head) + len(block) * repeat + len(tail)
    return Deflated(first + copy * repeat + last, size, crc, adler)


def pdf_bomb(mib: int, text: bool = False, encrypted: bool = False) -> bytes:
    """A one-page PDF whose content stream inflates to `mib` MiB: spaces, or text-showing
    operators (one text object per line: what PDFium keeps objects for); `encrypted`: RC4
    with an empty user password (revision 2, 40-bit), so its stream cannot be measured."""
    if text:
        line = b"(aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa) Tj\n"
        head, tail = b"BT /F1 12 Tf 72 720 Td\n", b"ET\n"
    else:
        line, head, tail = b" " * 64, b"", b""
    block = line * ((1 << 20) // len(line))
    deflated = deflate_repeat(head, block, mib, tail, checksum="adler32")
    stream = b"\x78\xda" + deflated.raw + struct.pack(">I", deflated.adler32)
    return one_page_pdf(stream, encrypted)


_FILE_ID = b"chromasync-test-id"


def one_page_pdf(stream: bytes, encrypted: bool = False) -> bytes:
    """A one-page PDF with the Flate-compressed content `stream` (Helvetica as /F1)."""
    key = owner = user = b""
    if encrypted:
        key, owner, user = _rc4_keys(_FILE_ID)
        stream = _rc4(hashlib.md5(key + struct.pack("<I", 4)[:3] + b"\0\0").digest()[:10], stream)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    if encrypted:
        objects.append(
            b"<< /Filter /Standard /V 1 /R 2 /O <%s> /U <%s> /P -4 >>"
            % (owner.hex().encode(), user.hex().encode())
        )
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    extra = b""
    if encrypted:
        extra = b" /Encrypt %d 0 R /ID [<%s> <%s>]" % (
            len(objects),
            _FILE_ID.hex().encode(),
            _FILE_ID.hex().encode(),
        )
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        extra,
        xref,
    )
    return bytes(out)


#: The standard security handler's password padding (PDF 32000-1, 7.6.3.3).
_PAD = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")


def _rc4_keys(file_id: bytes) -> tuple[bytes, bytes, bytes]:
    """Revision 2 (40-bit RC4), empty user and owner passwords, permissions -4: the file
    key, /O and /U (algorithms 2, 3 and 4)."""
    owner = _rc4(hashlib.md5(_PAD).digest()[:5], _PAD)
    key = hashlib.md5(_PAD + owner + struct.pack("<i", -4) + file_id).digest()[:5]
    return key, owner, _rc4(key, _PAD)


def _rc4(key: bytes, data: bytes) -> bytes:
    state = list(range(256))
    j = 0
    for i in range(256):
        j = (j + state[i] + key[i % len(key)]) % 256
        state[i], state[j] = state[j], state[i]
    out = bytearray(len(data))
    i = j = 0
    for n, byte in enumerate(data):
        i = (i + 1) % 256
        j = (j + state[i]) % 256
        state[i], state[j] = state[j], state[i]
        out[n] = byte ^ state[(state[i] + state[j]) % 256]
    return bytes(out)


def write_zip(members: list[tuple[str, bytes | Deflated, int | None]]) -> bytes:
    """A zip of (name, content or a prepared deflate stream, declared size or None)."""
    out = bytearray()
    central = bytearray()
    for name, content, declared in members:
        if isinstance(content, Deflated):
            raw, size, crc = content.raw, content.size, content.crc32
        else:
            packer = zlib.compressobj(9, zlib.DEFLATED, -15)
            raw = packer.compress(content) + packer.flush()
            size, crc = len(content), zlib.crc32(content)
        size = size if declared is None else declared
        encoded = name.encode()
        offset = len(out)
        fields = (20, 0, 8, 0, 0x21, crc, len(raw), size, len(encoded), 0)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields) + encoded + raw
        central += (
            struct.pack("<IH", 0x02014B50, 20)
            + struct.pack("<HHHHHIIIHHHHHII", *fields[:-1], 0, 0, 0, 0, 0, offset)
            + encoded
        )
    start = len(out)
    count = len(members)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(central), start, 0)
    return bytes(out)


def replace_member(
    package: bytes, name: str, content: bytes | Deflated, declared: int | None = None
) -> bytes:
    """`package` (a zip) with member `name` replaced (or added)."""
    with zipfile.ZipFile(io.BytesIO(package)) as source:
        members: list[tuple[str, bytes | Deflated, int | None]] = [
            (info.filename, source.read(info), None)
            for info in source.infolist()
            if info.filename != name
        ]
    members.append((name, content, declared))
    return write_zip(members)


_W_NS = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def docx_paragraphs(base: bytes, mib: int, text: bytes = b"word word word") -> bytes:
    """A DOCX whose `word/document.xml` holds `mib` MiB of short paragraphs of `text`."""
    paragraph = b"<w:p><w:r><w:t>" + text + b"</w:t></w:r></w:p>"
    block = paragraph * ((1 << 20) // len(paragraph))
    head = b'<?xml version="1.0"?><w:document ' + _W_NS + b"><w:body>"
    tail = b"</w:body></w:document>"
    return replace_member(base, "word/document.xml", deflate_repeat(head, block, mib, tail))


def member_bomb(base: bytes, name: str, mib: int, declared: int | None = None) -> bytes:
    """`base` with member `name` inflating to `mib` MiB of one repeated XML comment-free
    element (declaring `declared` bytes when given: a lie)."""
    element = b"<w:p/>" if name.startswith("word/") else b"<a:p/>"
    block = element * ((1 << 20) // len(element))
    ns = _W_NS if name.startswith("word/") else b'xmlns:a="urn:a"'
    head = b'<?xml version="1.0"?><w:document ' + ns + b"><w:body>"
    tail = b"</w:body></w:document>"
    return replace_member(base, name, deflate_repeat(head, block, mib, tail), declared)


_PPTX_NS = (
    b'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
    b'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'
)
_SLIDE_HEAD = b'<?xml version="1.0"?><p:sld ' + _PPTX_NS + b"><p:cSld><p:spTree>"
_SLIDE_TAIL = b"</p:spTree></p:cSld></p:sld>"
_SHAPE = b'<p:sp><p:nvSpPr><p:cNvPr id="9" name="b"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr>'


def pptx_shapes(base: bytes, mib: int, text: bytes = b"word word word") -> bytes:
    """A PPTX whose first slide holds `mib` MiB of small text boxes of `text`."""
    run = b"<a:p><a:r><a:t>" + text + b"</a:t></a:r></a:p>"
    shape = _SHAPE + b"<p:txBody>" + run + b"</p:txBody></p:sp>"
    block = shape * ((1 << 20) // len(shape))
    name = "ppt/slides/slide1.xml"
    return replace_member(base, name, deflate_repeat(_SLIDE_HEAD, block, mib, _SLIDE_TAIL))


def pptx_shape(base: bytes, mib: int) -> bytes:
    """A PPTX whose first slide holds one shape of `mib` MiB of empty paragraphs."""
    block = b"<a:p/>" * ((1 << 20) // 6)
    head = _SLIDE_HEAD + _SHAPE + b"<p:txBody>"
    tail = b"</p:txBody></p:sp>" + _SLIDE_TAIL
    name = "ppt/slides/slide1.xml"
    return replace_member(base, name, deflate_repeat(head, block, mib, tail))


def docx_styles(base: bytes, mib: int) -> bytes:
    """A DOCX whose `word/styles.xml` holds `mib` MiB of paragraph styles."""
    style = b'<w:style w:type="paragraph" w:styleId="s"><w:name w:val="x"/></w:style>'
    block = style * ((1 << 20) // len(style))
    head = b'<?xml version="1.0"?><w:styles ' + _W_NS + b">"
    return replace_member(base, "word/styles.xml", deflate_repeat(head, block, mib, b"</w:styles>"))


def core_properties(base: bytes, mib: int) -> bytes:
    """A DOCX or PPTX whose `docProps/core.xml` holds `mib` MiB of elements."""
    element = b"<dc:subject>aaaaaaaaaa</dc:subject>"
    block = element * ((1 << 20) // len(element))
    head = (
        b'<?xml version="1.0"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/'
        b'package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        b"<dc:title>The title</dc:title>"
    )
    tail = b"</cp:coreProperties>"
    return replace_member(base, "docProps/core.xml", deflate_repeat(head, block, mib, tail))


#: Billion laughs: ten entities of ten of the one before, "lol" expanded 10**9 times (3 GB).
LAUGHS = (
    b'<!DOCTYPE lolz [<!ENTITY lol0 "lol">'
    + b"".join(b'<!ENTITY lol%d "%s">' % (n, b"&lol%d;" % (n - 1) * 10) for n in range(1, 10))
    + b"]>"
)


def entity_bomb(base: bytes, name: str) -> bytes:
    """`base` with its XML part `name` declaring billion laughs before its root (`LAUGHS`)
    and using it as the root's first text."""
    with zipfile.ZipFile(io.BytesIO(base)) as source:
        part = source.read(name)
    root = part.index(b"<", part.index(b"?>"))  # past the XML declaration
    inside = part.index(b">", root) + 1
    part = part[:root] + LAUGHS + part[root:inside] + b"&lol9;" + part[inside:]
    return replace_member(base, name, part)


def html_text(mib: int) -> bytes:
    """`mib` MiB of HTML: a title, then text in one long line (no tag ends it)."""
    words = b"lorem ipsum dolor sit amet " * 40
    return b"<html><head><title>t</title></head><body><p>" + words * ((mib << 20) // len(words))


__all__ = [
    "Deflated",
    "core_properties",
    "deflate_repeat",
    "docx_paragraphs",
    "docx_styles",
    "entity_bomb",
    "html_text",
    "member_bomb",
    "pdf_bomb",
    "pptx_shape",
    "pptx_shapes",
    "replace_member",
    "write_zip",
]


# -- YAML: nested without end, or expanding ---------------------------------------------


def laughs(levels: int, width: int = 9) -> str:
    """A billion-laughs bomb: each anchor a list of `width` aliases of the one before."""
    names = [f"l{i}" for i in range(levels)]
    lines = [f"{names[0]}: &{names[0]} [{', '.join(['lol'] * width)}]"]
    for prev, name in itertools.pairwise(names):
        lines.append(f"{name}: &{name} [{', '.join([f'*{prev}'] * width)}]")
    return "\n".join(lines) + "\n"


def block_mappings(depth: int) -> str:
    return "".join(" " * i + f"k{i}:\n" for i in range(depth)) + " " * depth + "v: 1\n"


def block_lists(depth: int) -> str:
    return "".join(" " * (2 * i) + "-\n" for i in range(depth)) + " " * (2 * depth) + "- 1\n"
