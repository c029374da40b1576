"""An Office package's zip, opened within bounds: the directory checked, members read in
pieces that count against the budgets while they inflate.

Before anything is inflated, the zip directory is checked: the member count and the
declared uncompressed size of all members (`Limits.max_zip_members`, `max_uncompressed`).
A declared size cannot be trusted, though: `zipfile` stops at it, but inflates a whole read
into memory first when asked for it all (a member declaring 1 KB that inflates to 1 GB
took 2 GB before its CRC failed). So members are only ever read in 64 KiB pieces
(`member_pieces`), each counted against the caller's cap for that member and the file's
`max_inflated` as it comes; a lie about the size then fails the CRC check (`corrupt`) with
a piece in memory.

A password-protected Office file is not a zip but an OLE compound file holding an
`EncryptedPackage` stream: that is `encrypted`; any other non-zip is `corrupt`.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from collections.abc import Iterator
from typing import Any

from .pages import Meter, Refused, normalise_title

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


def read_member(archive: zipfile.ZipFile, name: str, meter: Meter, cap: int) -> bytes:
    """Member `name` whole, read as `member_pieces` reads it."""
    return b"".join(member_pieces(archive, name, meter, cap))


def relationships(archive: zipfile.ZipFile, part: str, meter: Meter, cap: int) -> dict[str, str]:
    """The relationship type (its last path segment) -> target part name of `part`
    (`""` for the package), from its `_rels/*.rels` member; {} when it has none."""
    found: dict[str, str] = {}
    for kind, target in relationship_ids(archive, part, meter, cap).values():
        found.setdefault(kind, target)
    return found


def relationship_ids(
    archive: zipfile.ZipFile, part: str, meter: Meter, cap: int
) -> dict[str, tuple[str, str]]:
    """Relationship id -> (type, its last path segment; target part name) of `part`'s
    internal relationships, in the order of its `_rels/*.rels` member; {} when it has none."""
    folder, base = posixpath.split(part)
    rels = posixpath.join(folder, "_rels", base + ".rels")
    try:
        data = read_member(archive, rels, meter, cap)
    except KeyError:
        return {}
    found: dict[str, tuple[str, str]] = {}
    for tag in _TARGET.findall(data):
        attrs = {k.decode(): v.decode("utf-8", "replace") for k, v in _ATTR.findall(tag)}
        kind = attrs.get("Type", "").rsplit("/", 1)[-1]
        target = attrs.get("Target", "")
        ident = attrs.get("Id", "")
        if kind and target and attrs.get("TargetMode") != "External" and ident not in found:
            if target.startswith("/"):
                name = posixpath.normpath(target.lstrip("/"))
            else:
                name = posixpath.normpath(posixpath.join(folder, target))
            found[ident] = (kind, name)
    return found


def parse_small(archive: zipfile.ZipFile, name: str, meter: Meter, cap: int) -> Any:
    """Member `name` (at most `cap` bytes) parsed whole by lxml: no entities, no network."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    return etree.fromstring(read_member(archive, name, meter, cap), parser)


def core_title(archive: zipfile.ZipFile, name: str, meter: Meter, cap: int) -> str:
    """The `dc:title` of the core properties part `name`; "" when there is none."""
    try:
        root = parse_small(archive, name, meter, cap)
    except KeyError:
        return ""
    found = root.find(_DC_TITLE)
    return normalise_title(found.text if found is not None else None)


__all__ = [
    "core_title",
    "member_pieces",
    "open_package",
    "parse_small",
    "read_member",
    "relationship_ids",
    "relationships",
]
