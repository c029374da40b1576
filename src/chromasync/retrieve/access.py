"""What clients of a service may read (re-exported by `api`).

The REST service, the MCP server and the search page read one document's chunks
(`get_document`, from the local state), one indexed file's current text
(`read_indexed_file`, only files the index holds, only inside their source's root).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..config.settings import Settings
from ..corpus.documents import DocumentSkip, document_format, read_document, render_markdown
from ..corpus.paths import check_path_text, relative_path, resolve_in_root, shown
from ..errors import AccessDenied, NotFound, SourceError
from ..metakeys import OWNER_KEY
from ..records import Hit
from ..state.manifest import State, stored_root


def get_document(
    settings: Settings,
    path: str,
    source: str | None = None,
    limit: int | None = None,
    collection: str | None = None,
) -> list[Hit]:
    """The indexed chunks of one file, in line order (from the local state; no store, no disk).

    `path` is relative to its source root, as hits cite it; `source` narrows to one source,
    `collection` to one collection; `limit` keeps the first chunks only.
    """
    rel = relative_path(path)
    with State.open(settings.data_dir, readonly=True) as state:
        rows = state.document_chunks(rel, source, limit, collection)
    if not rows:
        where = f" in source {source!r}" if source else ""
        raise NotFound(f"no indexed file {shown(path)}{where}; search for it first")
    return [
        Hit.from_metadata(
            rid,
            {**meta, "path": rel, OWNER_KEY: src, "heading": heading},
            text,
            0.0,
            collection,
        )
        for collection, src, rid, heading, text, meta in rows
    ]


@dataclass(frozen=True, slots=True)
class FileText:
    source: str
    path: str
    text: str
    truncated: bool
    #: A document (PDF, DOCX...): `text` is its extracted text as it was chunked (the
    #: lines hits cite), `pages[i]` starts at line `page_starts[i]`; empty for a text file.
    pages: tuple[int, ...] = ()
    page_starts: tuple[int, ...] = ()


def indexed_file_location(settings: Settings, source: str, path: str) -> Path:
    """Where an indexed file lies on disk, checked as `read_indexed_file` checks it: a
    file the manifest of `source` holds records for, resolving inside the source's root."""
    return _indexed_location(settings, source, path)[1]


def _indexed_location(settings: Settings, source: str, path: str) -> tuple[str, Path]:
    rel = relative_path(path)
    with State.open(settings.data_dir, readonly=True) as state:
        rows = [r for r in state.sources() if r.source == source]
        found = None
        for row in rows:
            entry = state.files(row.collection, source).get(rel)
            if entry is not None and entry.records:
                found = row
                break
    if not rows:
        raise NotFound(f"no indexed source labelled {source!r}")
    if found is None:
        raise NotFound(f"{shown(path)} is not an indexed file of source {source!r}")
    real = resolve_in_root(rel, stored_root(found), "file")
    return rel, real


def read_indexed_file(settings: Settings, source: str, path: str) -> FileText:
    """The current text of a file that is in the index (the only files a client may read).

    The path must be a file the manifest of `source` holds records for, and it must resolve,
    through any links, inside the source's root; anything else is `NotFound`/`AccessDenied`.
    """
    rel, real = _indexed_location(settings, source, path)
    try:
        with open(real, "rb") as handle:
            data = handle.read(settings.max_file_bytes + 1)
    except OSError as exc:
        raise NotFound(f"cannot read {shown(path)} of source {source!r}: {exc.strerror}") from exc
    truncated = len(data) > settings.max_file_bytes
    fmt = document_format(rel)
    if fmt is not None and not truncated:
        return _document_text(source, rel, data, fmt, path)
    text = data[: settings.max_file_bytes].decode("utf-8", "replace").replace("\r\n", "\n")
    return FileText(source, rel, text.removeprefix("\ufeff"), truncated)


def _document_text(source: str, rel: str, data: bytes, fmt: str, path: str) -> FileText:
    """A document's extracted text, rendered as ingest chunks it (never its raw bytes)."""
    read = read_document(data, fmt)
    if isinstance(read, DocumentSkip):
        raise NotFound(f"{shown(path)} of source {source!r} cannot be read now: {read.reason}")
    rendered = render_markdown(read)
    return FileText(source, rel, rendered.text, False, rendered.pages, rendered.page_starts)


#: `multi_get`'s default cap on one file's text (larger files are listed, not read).
DEFAULT_MAX_BYTES = 10_240
#: The most files one `multi_get` returns (the rest are left out, `left_out` says so).
MAX_GET_FILES = 200
_LOCATION = re.compile(r"^(?P<path>.+?):(?P<start>[0-9]+)(?:-(?P<end>[0-9]+))?$")


@dataclass(frozen=True, slots=True)
class FileLines:
    """Lines `start_line..end_line` (1-based, inclusive) of an indexed file's current text.

    `skipped` says why a `multi_get` file's text was left out (then `text` is empty).
    """

    source: str
    path: str
    start_line: int
    end_line: int
    total_lines: int
    text: str
    truncated: bool = False
    skipped: str | None = None


def parse_location(spec: str) -> tuple[str, int | None, int | None]:
    """`PATH[:START[-END]]` -> (path, start, end); a path that itself ends in `:N` needs `:N`."""
    found = _LOCATION.match(spec)
    if found is None:
        return spec, None, None
    start = int(found["start"])
    end = int(found["end"]) if found["end"] else None
    if start < 1 or (end is not None and end < start):
        raise SourceError(f"the line range in {shown(spec)} is empty; give START[-END], 1-based")
    return found["path"], start, end


def _indexed_sources(settings: Settings, rel: str, source: str | None) -> list[str]:
    with State.open(settings.data_dir, readonly=True) as state:
        rows = [r for r in state.sources() if source is None or r.source == source]
        holders = [r.source for r in rows if rel in state.files(r.collection, r.source, False)]
    if source is not None and not rows:
        raise NotFound(f"no indexed source labelled {source!r}")
    return list(dict.fromkeys(holders))


def _lines(found: FileText, start: int | None, end: int | None) -> FileLines:
    lines = found.text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    total = len(lines)
    first = start or 1
    if first > max(total, 1):
        raise NotFound(f"{shown(found.path)} has {total} lines; line {first} is past its end")
    last = min(end or total, total)
    return FileLines(
        found.source,
        found.path,
        first,
        last,
        total,
        "\n".join(lines[first - 1 : last]),
        found.truncated,
    )


def get_file(settings: Settings, spec: str, source: str | None = None) -> FileLines:
    """`PATH[:START[-END]]` of an indexed file: its current lines (checks of `read_indexed_file`).

    The path is relative to its source root, as hits cite it; absolute paths, `..`, NUL and
    control characters are refused (`SourceError`), links out of the root too (`AccessDenied`).
    A path several sources hold needs `source`.
    """
    path, start, end = parse_location(spec)
    rel = relative_path(path)
    holders = _indexed_sources(settings, rel, source)
    if not holders:
        where = f" of source {source!r}" if source else ""
        raise NotFound(f"{shown(rel)} is not an indexed file{where}; search for it first")
    if len(holders) > 1:
        raise SourceError(f"{shown(rel)} is indexed in {', '.join(holders)}; name the source")
    return _lines(read_indexed_file(settings, holders[0], rel), start, end)


def get_files(
    settings: Settings,
    pattern: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
    source: str | None = None,
) -> tuple[list[FileLines], int]:
    """Indexed files whose path matches the glob `pattern` (`*` crosses `/`), sorted; and how
    many more matched past `MAX_GET_FILES`. A file over `max_bytes` is listed with `skipped`;
    one leading out of its root through a link is listed as refused, never read."""
    check_path_text(pattern)
    if pattern.startswith("/"):
        raise SourceError(f"the glob {shown(pattern)} is absolute; give it relative to a source")
    if max_bytes < 1:
        raise SourceError("--max-bytes must be at least 1")
    with State.open(settings.data_dir, readonly=True) as state:
        rows = [r for r in state.sources() if source is None or r.source == source]
        if source is not None and not rows:
            raise NotFound(f"no indexed source labelled {source!r}")
        matched = sorted(
            {
                (r.source, rel)
                for r in rows
                for rel in state.files(r.collection, r.source, False)
                if fnmatch.fnmatchcase(rel, pattern)
            },
            key=lambda pair: (pair[1], pair[0]),
        )
    out = []
    for src, rel in matched[:MAX_GET_FILES]:
        try:
            found = read_indexed_file(settings, src, rel)
        except (AccessDenied, NotFound) as exc:
            out.append(FileLines(src, rel, 0, 0, 0, "", skipped=str(exc)))
            continue
        size = len(found.text.encode("utf-8"))
        if size > max_bytes:
            out.append(FileLines(src, rel, 0, 0, 0, "", skipped=f"{size} bytes > --max-bytes"))
            continue
        out.append(_lines(found, None, None) if found.text else FileLines(src, rel, 1, 0, 0, ""))
    return out, max(0, len(matched) - MAX_GET_FILES)


def get_json(settings: Settings, spec: str, source: str | None = None) -> dict[str, Any]:
    """`get_file` as JSON (what `Index.get` returns on every surface)."""
    return asdict(get_file(settings, spec, source))


def multi_get_json(
    settings: Settings,
    pattern: str,
    max_bytes: int = DEFAULT_MAX_BYTES,
    source: str | None = None,
) -> dict[str, Any]:
    """`get_files` as JSON: {files, left_out} (what `Index.multi_get` returns)."""
    files, left_out = get_files(settings, pattern, max_bytes, source)
    return {"files": [asdict(f) for f in files], "left_out": left_out}


__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_GET_FILES",
    "FileLines",
    "FileText",
    "get_document",
    "get_file",
    "get_files",
    "get_json",
    "indexed_file_location",
    "multi_get_json",
    "parse_location",
    "read_indexed_file",
]
