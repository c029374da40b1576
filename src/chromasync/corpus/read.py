"""Fingerprinting: read a file's bytes once, hash them, decode, and parse front matter.

The same bytes are hashed and chunked. A document (PDF, DOCX...; `walk.classify_extension`
says `document`) is hashed the same way, then read into text by `documents.read_document`
within its budgets and rendered as Markdown-ish text; a document it refuses is a skip with
its reason (`encrypted`, `no-text`, `corrupt`, `too-large`). `fstat` before and after the
read must agree with each other, or the read is retried; a file that keeps changing is a
counted skip. The size
limit is enforced by the read itself (never more than `max_bytes + 1` bytes are read), not
only by the walk that listed the file: a file swapped for a bigger one in between is a
`too-large` skip.
"""

from __future__ import annotations

import hashlib
import os
import stat as stat_mod
from collections.abc import Mapping
from dataclasses import replace

from ..records import Document, FileStat, MetaValue, ReadOutcome, Skip
from .documents import DocumentSkip, Limits, document_format, read_document, render_markdown
from .frontmatter import (
    MAX_VALUE_CHARS,
    FrontMatterError,
    flatten_metadata,
    is_private,
    split_front_matter,
)
from .sidecar import asset_ref
from .walk import classify_extension

#: Skip reasons that say nothing about the content: earlier records are kept.
TRANSIENT_REASONS = frozenset(
    {"changed-during-read", "permission-denied", "not-regular-file", "too-slow"}
)
_MAGIC = (
    b"\x89PNG",
    b"\x1f\x8b",
    b"%PDF",
    b"PK\x03\x04",
    b"\xff\xd8\xff",
    b"GIF8",
    b"\x7fELF",
    b"BZh",
    b"\xfd7zXZ",
    b"RIFF",
    b"OggS",
)
_ATTEMPTS = 3


def read_file(
    file: FileStat,
    identity_key: str | None = None,
    privacy_keys: tuple[str, ...] = ("private",),
    limits: Limits | None = None,
    max_bytes: int | None = None,
) -> ReadOutcome:
    """Read, hash and decode one file into a `Document`, or say why it is skipped
    (`limits`: the budgets of a document's reader).

    With `max_bytes`, a file larger than that (when it is opened, or as it is read) is a
    `too-large` skip and at most `max_bytes + 1` of its bytes are read.
    """
    raw: bytes | None = None
    current = file
    for _ in range(_ATTEMPTS):
        try:
            raw, current = _read_stable(file, max_bytes)
        except _TooLarge as exc:
            return ReadOutcome(file, None, skip=Skip(file.rel_path, "too-large", str(exc)))
        except PermissionError as exc:
            return ReadOutcome(file, None, skip=Skip(file.rel_path, "permission-denied", str(exc)))
        except _NotRegular:
            return ReadOutcome(file, None, skip=Skip(file.rel_path, "not-regular-file"))
        except _Unstable:
            continue
        except OSError as exc:
            return ReadOutcome(
                file, None, skip=Skip(file.rel_path, "permission-denied", str(exc.strerror))
            )
        break
    if raw is None:
        return ReadOutcome(file, None, skip=Skip(file.rel_path, "changed-during-read"))
    file_hash = hashlib.sha256(raw).hexdigest()
    return decode_document(current, raw, file_hash, identity_key, privacy_keys, limits)


def decode_document(
    file: FileStat,
    raw: bytes,
    file_hash: str,
    identity_key: str | None = None,
    privacy_keys: tuple[str, ...] = ("private",),
    limits: Limits | None = None,
) -> ReadOutcome:
    """Pure part of `read_file`: bytes to a normalised `Document` or a `Skip`."""

    def skip(reason: str, detail: str = "") -> ReadOutcome:
        return ReadOutcome(file, file_hash, skip=Skip(file.rel_path, reason, detail))

    classified = classify_extension(file.rel_path)
    if classified is not None and classified[0] == "document":
        return _decode_paged(file, raw, file_hash, limits)
    text = _decode(raw)
    if isinstance(text, Skip):
        return skip(text.reason)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    kind, language = classify_extension(file.rel_path) or ("text", None)
    metadata: Mapping[str, MetaValue] = {}
    dropped = 0
    body_start = 1
    identity: str | None = None
    asset = None
    if kind == "markdown":
        try:
            front = split_front_matter(text)
        except FrontMatterError as exc:
            return skip("frontmatter-invalid", str(exc))
        if front is not None:
            asset = asset_ref(file.rel_path, front.data)
            if is_private(front.data, privacy_keys):  # a private sidecar's document is too
                return ReadOutcome(
                    file, file_hash, skip=Skip(file.rel_path, "private"), asset=asset
                )
            metadata, dropped = flatten_metadata(front.data)
            if asset is not None:
                asset = replace(asset, metadata=metadata)
            body_start = front.body_start_line
            if identity_key and front.data.get(identity_key) is not None:
                identity = str(front.data[identity_key])
    body = "\n".join(text.split("\n")[body_start - 1 :])
    if not body.strip() and not (metadata.get("title") or metadata.get("description")):
        return ReadOutcome(file, file_hash, skip=Skip(file.rel_path, "empty"), asset=asset)
    document = Document(
        rel_path=file.rel_path,
        text=text,
        body_start_line=body_start,
        file_hash=file_hash,
        kind=kind,
        language=language,
        metadata=metadata,
        identity=identity,
    )
    return ReadOutcome(file, file_hash, document=document, dropped_metadata=dropped, asset=asset)


def _decode_paged(file: FileStat, raw: bytes, file_hash: str, limits: Limits | None) -> ReadOutcome:
    """A document's bytes read into pages and rendered for the Markdown chunker."""
    fmt = document_format(file.rel_path.rstrip())
    assert fmt is not None  # classify_extension said "document"
    read = read_document(raw, fmt, limits)
    if isinstance(read, DocumentSkip):
        return ReadOutcome(file, file_hash, skip=Skip(file.rel_path, read.reason, read.detail))
    rendered = render_markdown(read)
    title = read.title[:MAX_VALUE_CHARS]
    metadata: dict[str, MetaValue] = {"title": title} if title else {}
    document = Document(
        rel_path=file.rel_path,
        text=rendered.text,
        body_start_line=1,
        file_hash=file_hash,
        kind="document",
        language=None,
        metadata=metadata,
        doc_format=fmt,
        pages=rendered.pages,
        page_starts=rendered.page_starts,
    )
    return ReadOutcome(file, file_hash, document=document)


def _decode(raw: bytes) -> str | Skip:
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    elif raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            text = raw.decode("utf-16")
        except UnicodeDecodeError:
            return Skip("", "undecodable")
        return Skip("", "binary") if "\x00" in text else text.lstrip("\ufeff")
    if raw.startswith(_MAGIC) or b"\x00" in raw:
        return Skip("", "binary")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return Skip("", "undecodable")


class _Unstable(Exception):
    pass


class _NotRegular(Exception):
    pass


class _TooLarge(Exception):
    pass


def _read_stable(file: FileStat, max_bytes: int | None = None) -> tuple[bytes, FileStat]:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(file.abs_path, flags)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: it became a symlink
            raise _NotRegular from exc
        raise
    try:
        before = os.fstat(fd)
        if not stat_mod.S_ISREG(before.st_mode):
            raise _NotRegular
        if max_bytes is not None and before.st_size > max_bytes:
            raise _TooLarge(f"{before.st_size} bytes, more than the limit of {max_bytes}")
        chunks = []
        total = 0
        while True:
            want = 1 << 20 if max_bytes is None else min(1 << 20, max_bytes + 1 - total)
            block = os.read(fd, want)
            if not block:
                break
            chunks.append(block)
            total += len(block)
            if max_bytes is not None and total > max_bytes:
                raise _TooLarge(f"more than the limit of {max_bytes} bytes as read")
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns):
        raise _Unstable
    raw = b"".join(chunks)
    if len(raw) != after.st_size:
        raise _Unstable
    return raw, FileStat(
        file.rel_path,
        file.abs_path,
        after.st_size,
        after.st_mtime_ns,
        after.st_ctime_ns,
        after.st_ino,
    )
