"""Reverse links: which indexed chunks link to a target, and what one file links to.

Design notes: docs/internals.md, `retrieve/links.py`.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

from ..corpus.links import (
    NOTE_PREFIX,
    Link,
    extract_links,
    front_matter_links,
    is_internal,
    lookup_keys,
    note_title,
)
from ..errors import ConfigError
from ..metakeys import source_label
from ..versions import MAX_TARGET_CHARS
from .bm25 import KeywordIndex

MAX_TARGETS = 200  # stored targets one lookup may expand to


@dataclass(frozen=True, slots=True)
class TargetMatcher:
    """The stored link targets that mean one asked-for target: exact keys and prefixes."""

    asked: str
    keys: tuple[str, ...]
    prefixes: tuple[str, ...]

    def __call__(self, target: str) -> bool:
        return target in self.keys or any(target.startswith(p) for p in self.prefixes)


def target_matcher(target: str) -> TargetMatcher:
    """What a user's `target` matches (docs/internals.md); `ConfigError` if empty."""
    target = target.strip()
    if not target or len(target) > MAX_TARGET_CHARS:
        raise ConfigError(
            f"a link target must be 1 to {MAX_TARGET_CHARS} characters (a URL, path or title)"
        )
    if "/" not in target and "." not in target and ":" not in target:
        target = NOTE_PREFIX + target
    keys = lookup_keys(target)
    if not keys:
        raise ConfigError(f"{target!r} is not a URL, a path inside a source or a note title")
    prefixes: tuple[str, ...] = ()
    first = keys[0]
    if not is_internal(first):
        prefixes = (first + "/", first + "?")
    elif target.endswith("/") and not first.startswith(NOTE_PREFIX):
        prefixes = (first + "/",)
        keys = (first,)
    return TargetMatcher(target, keys, prefixes)


@dataclass(frozen=True, slots=True)
class LinkingChunk:
    """A chunk that links to the target, with each matching link (line, text, target)."""

    collection: str
    source: str
    path: str
    chunk_id: str
    heading: str
    start_line: int
    end_line: int
    links: tuple[Link, ...]

    def as_json(self) -> dict[str, object]:
        return asdict(self) | {"links": [link.as_json() for link in self.links]}


def stored_targets(index: KeywordIndex, collection: str, matcher: TargetMatcher) -> list[str]:
    """The distinct stored targets `matcher` matches in one collection (at most
    `MAX_TARGETS`): what a `--links-to` filter becomes (``$contains`` each)."""
    params: list[object] = [collection]
    conds = []
    if matcher.keys:
        conds.append(f"j.value IN ({','.join('?' * len(matcher.keys))})")
        params += matcher.keys
    for prefix in matcher.prefixes:
        conds.append("substr(j.value, 1, ?) = ?")
        params += [len(prefix), prefix]
    rows = index.db.execute(
        "SELECT DISTINCT j.value FROM chunks AS c, json_each(c.metadata, '$.links') AS j "
        f"WHERE c.collection = ? AND j.type = 'text' AND ({' OR '.join(conds)}) "
        f"ORDER BY j.value LIMIT {MAX_TARGETS + 1}",
        params,
    )
    found = [r[0] for r in rows]
    if len(found) > MAX_TARGETS:
        raise ConfigError(
            f"{matcher.asked!r} matches more than {MAX_TARGETS} distinct link targets; "
            "ask for a longer prefix"
        )
    return found


def linking_chunks(
    index: KeywordIndex, collection: str, matcher: TargetMatcher, limit: int = 1000
) -> list[LinkingChunk]:
    """Every chunk of `collection` with a link `matcher` matches, by path then line."""
    targets = stored_targets(index, collection, matcher)
    if not targets:
        return []
    marks = ",".join("?" * len(targets))
    rows = index.db.execute(
        "SELECT DISTINCT c.id, c.metadata, c.text FROM chunks AS c, "
        "json_each(c.metadata, '$.links') AS j "
        f"WHERE c.collection = ? AND j.type = 'text' AND j.value IN ({marks}) LIMIT ?",
        (collection, *targets, limit),
    )
    wanted = set(targets)
    out = []
    for rid, meta_json, text in rows:
        meta = json.loads(meta_json)
        links = [lk for lk in chunk_links(meta, text) if lk.target in wanted]
        out.append(
            LinkingChunk(
                collection=collection,
                source=source_label(meta),
                path=str(meta.get("path", "")),
                chunk_id=rid,
                heading=str(meta.get("heading", "")),
                start_line=int(meta.get("start_line", 0) or 0),
                end_line=int(meta.get("end_line", 0) or 0),
                links=tuple(links),
            )
        )
    out.sort(key=lambda c: (c.source, c.path, c.start_line))
    return out


def chunk_links(meta: dict[str, object], text: str) -> list[Link]:
    """The links of one stored chunk, found again in its text (with lines and link text),
    plus the front-matter links stored on the file's first chunk; deduplicated."""
    path = str(meta.get("path", ""))
    start = int(str(meta.get("start_line", 1) or 1))
    stored = meta.get("links")
    stored_set = set(stored) if isinstance(stored, list) else set()
    links = [link for link in extract_links(text, path, start) if link.target in stored_set]
    seen = {link.target for link in links}
    if meta.get("chunk_index") == 0:
        for link in front_matter_links(meta):
            if link.target in stored_set and link.target not in seen:
                links.append(Link(link.target, link.text, 0, "front-matter"))
                seen.add(link.target)
    unique = {(link.target, link.line, link.text): link for link in links}
    return list(unique.values())


@dataclass(frozen=True, slots=True)
class OutgoingLink:
    link: Link
    internal: bool
    missing: bool  # an internal target that is neither indexed nor on disk

    def as_json(self) -> dict[str, object]:
        return {**self.link.as_json(), "internal": self.internal, "missing": self.missing}


def file_links(
    index: KeywordIndex,
    collection: str,
    source: str,
    path: str,
    exists: Callable[[str], bool] = lambda target: False,
) -> list[OutgoingLink]:
    """What one indexed file links to, in file order; internal targets that are neither in
    the index nor (`exists`) on disk are `missing` (broken links)."""
    rows = index.db.execute(
        "SELECT metadata, text FROM chunks WHERE collection = ? AND source = ? AND path = ?",
        (collection, source, path),
    )
    links: list[Link] = []
    for meta_json, text in rows:
        links += chunk_links(json.loads(meta_json), text)
    unique = sorted({(lk.line, lk.target, lk.text): lk for lk in links}.values(), key=_order)
    known = _known_targets(index.paths(collection))
    return [
        OutgoingLink(
            lk,
            is_internal(lk.target),
            is_internal(lk.target) and lk.target not in known and not exists(lk.target),
        )
        for lk in unique
    ]


def _order(link: Link) -> tuple[int, str]:
    return (link.line, link.target)


def _known_targets(paths: Iterable[str]) -> set[str]:
    """Every stored form that points at an indexed path (path, stem, note title)."""
    known: set[str] = set()
    for path in paths:
        known.add(path)
        stem, dot, ext = path.rpartition(".")
        if dot and stem and "/" not in ext:
            known.add(stem)
        known.add(NOTE_PREFIX + note_title(path))
        folder = posixpath.dirname(path)
        while folder:
            known.add(folder)
            folder = posixpath.dirname(folder)
    return known


def group_links(chunks: Sequence[LinkingChunk]) -> list[dict[str, object]]:
    """The linking chunks as one entry per file (for output)."""
    files: dict[tuple[str, str, str], list[LinkingChunk]] = {}
    for chunk in chunks:
        files.setdefault((chunk.collection, chunk.source, chunk.path), []).append(chunk)
    return [
        {
            "collection": key[0],
            "source": key[1],
            "path": key[2],
            "chunks": [c.as_json() for c in group],
        }
        for key, group in files.items()
    ]


@dataclass(frozen=True, slots=True)
class LinksReport:
    """`chromasync links`: the chunks linking to a target, or what one file links to."""

    target: str | None
    keys: tuple[str, ...]
    chunks: tuple[LinkingChunk, ...] = ()
    from_path: str | None = None
    source: str | None = None
    outgoing: tuple[OutgoingLink, ...] = ()

    def as_json(self) -> dict[str, object]:
        if self.from_path is not None:
            return {
                "from": self.from_path,
                "source": self.source,
                "links": [o.as_json() for o in self.outgoing],
                "missing": sorted({o.link.target for o in self.outgoing if o.missing}),
            }
        return {
            "target": self.target,
            "matches": list(self.keys),
            "files": group_links(self.chunks),
            "chunk_count": len(self.chunks),
        }


__all__ = [
    "LinkingChunk",
    "LinksReport",
    "OutgoingLink",
    "TargetMatcher",
    "chunk_links",
    "file_links",
    "group_links",
    "linking_chunks",
    "stored_targets",
    "target_matcher",
]
