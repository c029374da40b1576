"""Outgoing links of a text: extraction and normalisation. Pure.

Design notes: docs/internals.md, `corpus/links.py`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit

from ..versions import MAX_TARGET_CHARS

#: The link targets recorded for one chunk, and for one file in all: a file is read whole
#: before it is written, and its records hold its links (600,000 of them in 8 MiB were
#: 28 MB of strings); a link past these is left out of the reverse links.
MAX_LINKS = 200
MAX_FILE_LINKS = 20_000
NOTE_PREFIX = "note:"
TRACKING_PARAMS = frozenset(
    {"fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "mc_cid", "mc_eid", "igshid"}
)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")

_INLINE = re.compile(r"(!?)\[([^\]\n]{0,500})\]\(\s*<?([^)\s>]{1,2000})>?(?:\s+[\"'(][^)\n]*)?\)")
_REF_USE = re.compile(r"(!?)\[([^\]\n]{1,500})\](?:\[([^\]\n]{0,500})\])?(?![(:\[])")
_REF_DEF = re.compile(r"^ {0,3}\[([^\]\n]{1,500})\]:\s*<?(\S{1,2000}?)>?(?:\s+.*)?$", re.M)
_WIKI = re.compile(r"(!?)\[\[([^\]|\n]{1,500})(?:\|([^\]\n]{0,500}))?\]\]")
_AUTOLINK = re.compile(r"<(https?://[^>\s]{1,2000})>")
_BARE = re.compile(r"https?://[^\s<>\"'`\])]{1,2000}")
_TRAILING = ".,;:!?*_~'\""


@dataclass(frozen=True, slots=True)
class Link:
    """One outgoing link: its normalised target, the text it was written with, its line."""

    target: str
    text: str
    line: int  # 1-based, in the file
    kind: str  # "markdown", "image", "reference", "wikilink", "url", "front-matter"

    def as_json(self) -> dict[str, object]:
        return {"target": self.target, "text": self.text, "line": self.line, "kind": self.kind}


def normalise_url(url: str) -> str | None:
    """The canonical form of an absolute URL (docs/internals.md); None if unusable."""
    url = url.strip()
    if not url or len(url) > MAX_TARGET_CHARS:
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        return url if scheme else None
    host = (parts.hostname or "").lower()
    if not host:
        return None
    netloc = host if ":" not in host else f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    query = "&".join(
        p for p in parts.query.split("&") if p and not _is_tracking(p.split("=", 1)[0].lower())
    )
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, netloc, path, query, ""))


def _is_tracking(name: str) -> bool:
    return name.startswith("utm_") or name in TRACKING_PARAMS


def resolve_path(target: str, from_path: str) -> str | None:
    """`target` (relative to the file `from_path`, or absolute from the root) as a path
    relative to the source root; None when it leaves the root or is empty."""
    target = unquote(target.split("#", 1)[0].split("?", 1)[0]).strip()
    if not target:
        return None
    if target.startswith("/"):
        joined = target.lstrip("/")
    else:
        joined = posixpath.join(posixpath.dirname(from_path), target)
    resolved = posixpath.normpath(joined)
    if resolved in (".", "") or resolved == ".." or resolved.startswith("../"):
        return None
    return resolved


def normalise_target(raw: str, from_path: str) -> str | None:
    """The stored form of a link written as `raw` in the file `from_path`."""
    raw = raw.strip()
    if not raw or len(raw) > MAX_TARGET_CHARS or raw.startswith("#"):
        return None  # a fragment alone points into the same file
    if raw.startswith("//"):
        raw = "https:" + raw
    if _SCHEME.match(raw):
        return normalise_url(raw)
    return resolve_path(raw, from_path)


def normalise_wikilink(raw: str, from_path: str) -> str | None:
    """The stored form of a wikilink target (`[[raw]]`, alias already removed)."""
    name = raw.split("#", 1)[0].split("^", 1)[0].strip()
    if not name:
        return None
    if "/" in name:
        return resolve_path(name, from_path)
    return NOTE_PREFIX + name.casefold()


def note_title(path: str) -> str:
    """The title a wikilink uses for a file: its name without the extension."""
    base = posixpath.basename(path)
    stem, dot, _ = base.rpartition(".")
    return (stem if dot and stem else base).casefold()


def lookup_keys(target: str, base: str = "") -> tuple[str, ...]:
    """The stored targets that mean what a user asked for: a URL, a path relative to the
    source root, or a note title. A path ``a/x.md`` also matches ``a/x`` and ``note:x``."""
    target = target.strip()
    if not target:
        return ()
    if target.casefold().startswith(NOTE_PREFIX):
        return (NOTE_PREFIX + target[len(NOTE_PREFIX) :].strip().casefold(),)
    if _SCHEME.match(target) or target.startswith("//"):
        url = normalise_target(target, base)
        return (url,) if url else ()
    path = resolve_path(target, base or "x")
    if path is None:
        return ()
    keys = [path]
    stem, dot, _ = path.rpartition(".")
    if dot and stem and "/" not in path[len(stem) :]:
        keys.append(stem)
    keys.append(NOTE_PREFIX + note_title(path))
    return tuple(dict.fromkeys(keys))


def _clean_url(url: str) -> str:
    url = url.rstrip(_TRAILING)
    if url.endswith(")") and url.count("(") < url.count(")"):
        url = url[:-1]
    return url


def extract_links(text: str, from_path: str, first_line: int = 1) -> list[Link]:
    """The outgoing links of `text` (a chunk or a whole body) in order of appearance;
    `first_line` is the file line `text` starts on. Linear in the text's length."""
    definitions: dict[str, str] = {}
    for match in _REF_DEF.finditer(text) if "]:" in text else ():
        definitions.setdefault(match.group(1).strip().casefold(), match.group(2))
    found: list[tuple[int, Link]] = []
    taken: list[tuple[int, int]] = []

    def add(start: int, end: int, raw: str | None, label: str, kind: str) -> None:
        if raw is None or len(found) >= MAX_LINKS or len(taken) >= 4 * MAX_LINKS:
            return
        target = (
            normalise_wikilink(raw, from_path)
            if kind == "wikilink"
            else normalise_target(raw, from_path)
        )
        taken.append((start, end))
        if target is None:
            return
        line = first_line + text.count("\n", 0, start)
        found.append((start, Link(target, label.strip()[:500], line, kind)))

    def free(start: int, end: int) -> bool:
        return not any(s < end and start < e for s, e in taken)

    for m in _WIKI.finditer(text) if "[[" in text else ():
        add(m.start(), m.end(), m.group(2), m.group(3) or m.group(2), "wikilink")
    for m in _INLINE.finditer(text) if "](" in text else ():
        if free(m.start(), m.end()):
            add(m.start(), m.end(), m.group(3), m.group(2), "image" if m.group(1) else "markdown")
    if definitions:
        for m in _REF_DEF.finditer(text):
            if free(m.start(), m.end()):
                add(m.start(), m.end(), m.group(2), m.group(1), "reference")
        for m in _REF_USE.finditer(text):
            if not free(m.start(), m.end()):
                continue
            label = (m.group(3) or m.group(2)).strip().casefold()
            if label in definitions:
                add(m.start(), m.end(), definitions[label], m.group(2), "reference")
    for m in _AUTOLINK.finditer(text) if "<http" in text else ():
        if free(m.start(), m.end()):
            add(m.start(), m.end(), m.group(1), m.group(1), "url")
    for m in _BARE.finditer(text) if "http" in text else ():
        if free(m.start(), m.end()):
            url = _clean_url(m.group(0))
            add(m.start(), m.start() + len(url), url, url, "url")
    found.sort(key=lambda pair: pair[0])
    return [link for _, link in found]


def front_matter_links(metadata: Mapping[str, object], header: str = "") -> list[Link]:
    """Links from front-matter fields whose value (or a list item) is an http(s) URL;
    `header` (the front matter's text) gives each field's line."""
    lines: dict[str, int] = {}
    for number, text in enumerate(header.split("\n"), 1):
        key, colon, _ = text.partition(":")
        if colon and key and not key[0].isspace():
            lines.setdefault(key.strip().strip("\"'"), number)
    out: list[Link] = []
    for key, value in metadata.items():
        line = lines.get(key.split(".", 1)[0], 1)
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str) and item.strip().lower().startswith(("http://", "https://")):
                target = normalise_url(item)
                if target and len(out) < MAX_LINKS:
                    out.append(Link(target, key, line, "front-matter"))
    return out


def link_targets(links: Iterable[Link]) -> list[str]:
    """The distinct targets of `links`, sorted (the record's ``links`` metadata)."""
    return sorted({link.target for link in links})[:MAX_LINKS]


def is_internal(target: str) -> bool:
    """True for a path or a note title (a target inside the corpus), False for a URL."""
    return not _SCHEME.match(target) or target.startswith(NOTE_PREFIX)


__all__ = [
    "MAX_FILE_LINKS",
    "MAX_LINKS",
    "NOTE_PREFIX",
    "Link",
    "extract_links",
    "front_matter_links",
    "is_internal",
    "link_targets",
    "lookup_keys",
    "normalise_target",
    "normalise_url",
    "note_title",
    "resolve_path",
]
