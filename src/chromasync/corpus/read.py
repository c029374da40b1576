"""Fingerprinting: read a file's bytes once, hash them, decode, and parse front matter.

Design notes: docs/internals.md, `corpus/read.py`.
"""

from __future__ import annotations

import hashlib
import os
import re
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
    encoding: str = "detect",
) -> ReadOutcome:
    """Read, hash and decode one file into a `Document`, or say why it is skipped
    (`limits`: the budgets of a document's reader; `encoding`: see `decode_text`).

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
    return decode_document(
        current, raw, file_hash, identity_key, privacy_keys, limits, encoding=encoding
    )


def decode_document(
    file: FileStat,
    raw: bytes,
    file_hash: str,
    identity_key: str | None = None,
    privacy_keys: tuple[str, ...] = ("private",),
    limits: Limits | None = None,
    *,
    encoding: str = "detect",
) -> ReadOutcome:
    """Pure part of `read_file`: bytes to a normalised `Document` or a `Skip`."""

    def skip(reason: str, detail: str = "") -> ReadOutcome:
        return ReadOutcome(file, file_hash, skip=Skip(file.rel_path, reason, detail))

    classified = classify_extension(file.rel_path)
    if classified is not None and classified[0] == "document":
        return _decode_paged(file, raw, file_hash, limits)
    text = decode_text(raw, encoding)
    if isinstance(text, Skip):
        return skip(text.reason, text.detail)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    kind, language = classify_extension(file.rel_path) or ("text", None)
    metadata: Mapping[str, MetaValue] = {}
    body_start = 1
    identity: str | None = None
    asset = None
    dropped = 0
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
    body = text.split("\n", body_start - 1)[-1]  # one cut, not an object a line
    if (not body or body.isspace()) and not (metadata.get("title") or metadata.get("description")):
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
    return ReadOutcome(file, file_hash, document=document, asset=asset, dropped=dropped)


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


def decode_text(raw: bytes, encoding: str = "detect") -> str | Skip:
    """`raw` as text: UTF-8 (a BOM names UTF-8 or UTF-16) first; bytes that are not UTF-8
    are read as `encoding` says: `detect` (the default: `detect_text`), a codec (`cp1252`),
    or `utf-8` (none: an `undecodable` skip), and are an `undecodable` skip when that fails."""
    decoded = _decode(raw)
    if not (isinstance(decoded, Skip) and decoded.reason == "undecodable"):
        return decoded
    if encoding == "detect":
        detected = detect_text(raw)
        if detected is None:
            return Skip("", "undecodable", "no charset detected with confidence")
        return detected
    if encoding.lower().replace("_", "-") not in ("utf-8", "utf8"):
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            return Skip("", "undecodable", f"not {encoding} either: {exc}")
        return text
    return decoded


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


#: The most "chaos" (charset-normalizer's share of odd characters) a detected decoding may
#: show to be taken: above it, a file that is not UTF-8 stays an `undecodable` skip.
MAX_CHAOS = 0.1
#: Fewer bytes than this are too little evidence for a detector (Western text is read
#: at any length by `_western`, which needs no statistics).
MIN_DETECT_BYTES = 64
#: Control characters no text file holds (tab, newlines and form feed are fine).
_CONTROLS = frozenset(chr(c) for c in (*range(0, 9), 11, *range(14, 32), 127))
#: Bytes shaped like UTF-8 (a lead byte and its continuation bytes, or a sequence cut
#: short at the end): a file holding them and failing UTF-8 is broken UTF-8, not Latin-1.
_UTF8_SHAPED = re.compile(
    rb"[\xc0-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf7][\x80-\xbf]{3}"
    rb"|[\xe0-\xf7][\x80-\xbf]{1,2}\Z"
)
_LEAD = re.compile(rb"[\xc0-\xf7][\x80-\xbf]")  # where a shape may start (a fast scan)


def _cp1252(chars: str) -> bytes:
    return bytes(sorted(chars.encode("cp1252")))


#: cp1252's bytes of Western European letters, and of the marks text holds; a mark between
#: two letters is only an apostrophe, a middle dot or a soft hyphen (l’été, col·lecció).
_LETTERS = _cp1252("".join(chr(c) for c in range(0xC0, 0x100) if chr(c).isalpha()) + "ŒœŠšŽžŸ")
_MARKS = _cp1252("\xa0¡¢£¤¥¦§¨©ª«¬\xad®¯°±²³´µ¶·¸¹º»¼½¾¿×÷€‚„…†‡ˆ‰‹‘’“”•–—˜™›")
_MID_WORD = _cp1252("’‘·\xad")
_ASCII_LETTERS = bytes(range(65, 91)) + bytes(range(97, 123))
_ANY_LETTER = b"A-Za-z" + re.escape(_LETTERS)
_HIGH = re.compile(rb"[\x80-\xff]")
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_MARK_IN_WORD = re.compile(
    b"["
    + _ANY_LETTER
    + b"]["
    + re.escape(bytes(sorted(set(_MARKS) - set(_MID_WORD))))
    + b"]["
    + _ANY_LETTER
    + b"]"
)
_WIDE_RUN = re.compile(b"[" + re.escape(_LETTERS) + b"]{3,}")
#: How charset-normalizer's names of the East Asian code pages begin (two bytes a character).
_MULTIBYTE = ("big5", "cp932", "cp949", "cp950", "euc", "gb", "hz", "iso2022", "johab", "shift")


def detect_text(raw: bytes) -> str | None:
    """`raw` (not UTF-8, no BOM) decoded with confidence, or None: Western text first, then
    charset-normalizer's guess (docs/internals.md)."""
    shaped = any(_UTF8_SHAPED.match(raw, m.start()) for m in _LEAD.finditer(raw))
    western = None if shaped else _western(raw)
    if western is not None or len(raw) < MIN_DETECT_BYTES:
        return western
    from charset_normalizer import from_bytes

    matches = [
        m
        for m in from_bytes(raw)
        if m.chaos <= MAX_CHAOS
        and not m.encoding.lower().replace("-", "_").startswith(("utf_16", "utf_32", "utf_7"))
        and (m.encoding.startswith(_MULTIBYTE) or not shaped)
    ]
    if not matches:
        return None
    try:
        text = raw.decode(min(matches, key=lambda m: m.chaos).encoding)
    except (UnicodeDecodeError, LookupError):
        return None
    return None if any(ch in _CONTROLS for ch in text) else text


def _western(raw: bytes) -> str | None:
    """`raw` read as cp1252 (Latin-1's printable characters and 27 more) when it reads as
    Western text: no control character; every other byte above ASCII a Western letter or
    mark, a mark between two letters only an apostrophe or a middle dot; no word of three
    letters or more without an ASCII letter, and at most twice as many accented letters
    as ASCII ones ("été"; Cyrillic, Greek or Hebrew code pages read as cp1252 are whole
    words of accented letters). Byte by byte in C (`bytes.translate`, regular
    expressions): linear."""
    try:
        text = raw.decode("cp1252")
    except UnicodeDecodeError:
        return None
    if _CONTROL.search(raw) or _HIGH.search(raw.translate(None, _LETTERS + _MARKS)):
        return None
    if _MARK_IN_WORD.search(raw):
        return None
    for run in _WIDE_RUN.finditer(raw):  # accented letters only: a word of its own?
        start, end = run.span()
        if not (raw[start - 1 : start].isalpha() or raw[end : end + 1].isalpha()):
            return None
    accented = len(raw) - len(raw.translate(None, _LETTERS))
    ascii_letters = len(raw) - len(raw.translate(None, _ASCII_LETTERS))
    return text if accented <= 2 * ascii_letters else None


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
