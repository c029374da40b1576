"""An Office package's zip, opened within bounds: the directory checked, members read in
pieces that count against the budgets while they inflate.

Design notes: docs/internals.md, `corpus/zipparts.py`.
"""

from __future__ import annotations

import contextlib
import io
import posixpath
import re
import zipfile
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING
from xml.parsers.expat import ExpatError

from .pages import Heading, Meter, Page, PagedDocument, Refused, normalise_title
from .xmlstream import PullParser

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

#: The most bytes of a `.rels` part (one of 10,000 relationships is about 150 KB).
MAX_RELS = 4 * 1024 * 1024
#: The most bytes of `docProps/core.xml` (a few KB; streamed, so memory stays flat).
MAX_CORE = 16 * 1024 * 1024
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_PIECE = 64 * 1024
_TARGET = re.compile(rb"<Relationship\b[^>]*>")
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_ATTR = re.compile(rb"""(\w+)\s*=\s*["']([^"']*)["']""")


def open_package(data: bytes, meter: Meter) -> zipfile.ZipFile:
    """The package's zip, after refusing an encrypted, non-zip or oversized one."""
    if data.startswith(_OLE_MAGIC):
        if "EncryptedPackage".encode("utf-16-le") in data:
            raise Refused("encrypted", "a password-protected Office file")
        raise Refused("corrupt", "an OLE compound file, not an Office Open XML package")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise Refused("corrupt", f"not a readable zip package: {exc}") from exc
    limits = meter.limits
    if len(members) > limits.max_zip_members:
        archive.close()
        raise Refused("too-large", f"{len(members)} zip members (limit {limits.max_zip_members})")
    total = sum(m.file_size for m in members)
    if total > limits.max_uncompressed:
        archive.close()
        raise Refused("too-large", f"{total} bytes uncompressed (limit {limits.max_uncompressed})")
    return archive


@contextlib.contextmanager
def opened_package(data: bytes, meter: Meter) -> Iterator[zipfile.ZipFile]:
    """`open_package`, closed after the body; a zip, XML or missing-part error while the
    body reads it is `corrupt` (the body's own `Refused` passes through)."""
    archive = open_package(data, meter)
    try:
        yield archive
    except KeyError as exc:
        raise Refused("corrupt", f"a part is missing: {exc}") from exc
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ExpatError) as exc:
        raise Refused("corrupt", f"{type(exc).__name__}: {exc}") from exc
    except NotImplementedError as exc:  # an unsupported zip compression method
        raise Refused("corrupt", f"{type(exc).__name__}: {exc}") from exc
    finally:
        archive.close()


def member_pieces(archive: zipfile.ZipFile, name: str, meter: Meter, cap: int) -> Iterator[bytes]:
    """Member `name` in pieces, each counted as it inflates: past `cap` bytes (or its
    declared size over `cap`) it is `too-large`. A missing member raises KeyError."""
    info = archive.getinfo(name)
    if info.file_size > cap:
        raise Refused("too-large", f"{name}: {info.file_size} bytes uncompressed (limit {cap})")
    seen = 0
    with archive.open(info) as member:
        while True:
            piece = member.read(_PIECE)
            if not piece:
                return
            seen += len(piece)
            meter.inflate(len(piece))
            if seen > cap:
                raise Refused("too-large", f"{name} inflates past {cap} bytes")
            yield piece


def member_events(
    archive: zipfile.ZipFile, name: str, meter: Meter, cap: int
) -> Iterator[tuple[Element, list[Element]]]:
    """Member `name` parsed as a stream (`xmlstream.PullParser` fed `member_pieces`): each
    element as it ends, with its ancestors (read them before taking the next), the last
    ones after the parser is closed (pieces wait while a token is open, so the end of the
    part can be parsed only then). A missing member raises KeyError."""
    parser = PullParser()
    for piece in member_pieces(archive, name, meter, cap):
        parser.feed(piece)
        yield from parser.read_events()
    parser.close()
    yield from parser.read_events()


def read_member(archive: zipfile.ZipFile, name: str, meter: Meter, cap: int) -> bytes:
    """Member `name` whole, read as `member_pieces` reads it."""
    return b"".join(member_pieces(archive, name, meter, cap))


def relationships(archive: zipfile.ZipFile, part: str, meter: Meter) -> dict[str, str]:
    """The relationship type (its last path segment) -> target part name of `part`
    (`""` for the package), the first of each type, from its `_rels/*.rels` member; {} when
    it has none."""
    found: dict[str, str] = {}
    for _, kind, target in _relations(archive, part, meter):
        found.setdefault(kind, target)
    return found


def relationship_ids(
    archive: zipfile.ZipFile, part: str, meter: Meter, kind: str
) -> dict[str, str]:
    """Relationship id -> target part name of `part`'s internal relationships of type
    `kind` (its last path segment), from its `_rels/*.rels` member; {} when it has none."""
    found: dict[str, str] = {}
    for ident, seen, target in _relations(archive, part, meter):
        if seen == kind:
            found.setdefault(ident, target)
    return found


def _relations(archive: zipfile.ZipFile, part: str, meter: Meter) -> Iterator[tuple[str, str, str]]:
    """(id, type, target part name) of `part`'s internal relationships, in order (at most
    `MAX_RELS` bytes of them, matched one at a time)."""
    folder, base = posixpath.split(part)
    rels = posixpath.join(folder, "_rels", base + ".rels")
    try:
        data = read_member(archive, rels, meter, MAX_RELS)
    except KeyError:
        return
    for match in _TARGET.finditer(data):
        attrs = {k.decode(): v.decode("utf-8", "replace") for k, v in _ATTR.findall(match[0])}
        kind = attrs.get("Type", "").rsplit("/", 1)[-1]
        target = attrs.get("Target", "")
        if kind and target and attrs.get("TargetMode") != "External":
            if target.startswith("/"):
                name = posixpath.normpath(target.lstrip("/"))
            else:
                name = posixpath.normpath(posixpath.join(folder, target))
            yield attrs.get("Id", ""), kind, name


def core_title(archive: zipfile.ZipFile, name: str, meter: Meter) -> str:
    """The `dc:title` of the core properties part `name` ("" when there is none), parsed
    as a stream: every element dropped once it ends."""
    title: str | None = None
    try:
        for element, ancestors in member_events(archive, name, meter, MAX_CORE):
            if element.tag == _DC_TITLE and title is None:
                title = element.text or ""
            if ancestors:
                ancestors[-1].remove(element)
    except KeyError:
        return ""
    return normalise_title(title)


def read_package(
    data: bytes,
    meter: Meter,
    fmt: str,
    main: str,
    pages_of: Callable[[zipfile.ZipFile, str, Meter], tuple[Page, ...]],
) -> PagedDocument:
    """An Office package as a document: the pages `pages_of` reads from its main part
    (`main` when no relationship names it), its core title, and its headings as outline."""
    with opened_package(data, meter) as archive:
        package = relationships(archive, "", meter)
        pages = pages_of(archive, package.get("officeDocument", main), meter)
        title = core_title(archive, package.get("core-properties", "docProps/core.xml"), meter)
    outline = tuple(Heading(b.level, b.text, p.number) for p in pages for b in p.blocks if b.level)
    return PagedDocument(fmt, pages, title, outline)


__all__ = [
    "MAX_CORE",
    "MAX_RELS",
    "core_title",
    "member_events",
    "member_pieces",
    "open_package",
    "opened_package",
    "read_member",
    "read_package",
    "relationship_ids",
    "relationships",
]
