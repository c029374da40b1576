"""What clients of a service may read, and which sources it knows (re-exported by `api`).

The REST service, the MCP server and the search page read one document's chunks
(`get_document`, from the local state), one indexed file's current text
(`read_indexed_file`, only files the index holds, only inside their source's root).
`select_known` names the
sources a service can reindex or watch: the config's `include: true` sources, and sources
indexed before by `chromasync ingest PATH` that the config does not declare.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.settings import Settings
from ..config.sources import configured_entries, select_entries
from ..corpus.documents import DocumentSkip, document_format, read_document, render_markdown
from ..corpus.paths import relative_path, resolve_in_root, shown
from ..errors import NotFound, SourceError
from ..records import Hit, SourceSpec
from ..state.manifest import State, stored_root

if TYPE_CHECKING:
    from ..config.file import SourceEntry


def get_document(settings: Settings, path: str, source: str | None = None) -> list[Hit]:
    """The indexed chunks of one file, in line order (from the local state; no store, no disk).

    `path` is relative to its source root, as hits cite it; `source` narrows to one source.
    """
    rel = relative_path(path)
    with State.open(settings.data_dir, readonly=True) as state:
        rows = state.document_chunks(rel, source)
    if not rows:
        where = f" in source {source!r}" if source else ""
        raise NotFound(f"no indexed file {shown(path)}{where}; search for it first")
    return [
        Hit.from_metadata(
            rid, {**meta, "path": rel, "source": src, "heading": heading}, text, 0.0, collection
        )
        for collection, src, rid, heading, text, meta in rows
    ]


log = logging.getLogger(__name__)


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


def select_known(
    settings: Settings, labels: Sequence[str] = ()
) -> tuple[list[SourceEntry], list[SourceSpec]]:
    """(configured entries, specs of undeclared indexed sources) for `labels`, or for all.

    All means every `include: true` source of the config plus every source the state holds
    that the config does not declare. A label that is neither is `NotFound`; a configured
    source with `include: false` is a `ConfigError` (see `sources.select_entries`).
    """
    entries = configured_entries(settings)
    declared = {e.label for e in entries}
    with State.open(settings.data_dir, readonly=True) as state:
        undeclared = {r.source: r for r in state.sources() if r.source not in declared}
    if not labels:
        chosen = [e for e in entries if e.include]
        others = list(undeclared.values())
    else:
        wanted = list(dict.fromkeys(labels))
        missing = [x for x in wanted if x not in declared and x not in undeclared]
        if missing:
            names = ", ".join(sorted(declared | set(undeclared))) or "none yet"
            raise NotFound(f"no source labelled {missing[0]!r} (known: {names})")
        chosen = select_entries(entries, [x for x in wanted if x in declared])
        chosen = chosen if any(x in declared for x in wanted) else []
        others = [undeclared[x] for x in wanted if x in undeclared]
    specs = []
    for r in others:
        try:
            root = stored_root(r)
        except SourceError as exc:
            if labels:
                raise
            log.warning("%s", exc)  # the others still run; this one needs its root named
            continue
        specs.append(SourceSpec(label=r.source, root=root, kind=r.kind, collection=r.collection))
    return chosen, specs


__all__ = [
    "FileText",
    "get_document",
    "indexed_file_location",
    "read_indexed_file",
    "select_known",
]
