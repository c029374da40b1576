"""A hit's "open in editor" link, from the `editor_uri` setting (`vscode://file{path}:{line}`).

Design notes: docs/internals.md, `retrieve/editor.py`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import posixpath
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

from ..config.settings import Settings
from ..errors import ChromasyncError
from ..records import Hit
from ..state.manifest import State
from .results import SearchResult

log = logging.getLogger(__name__)


def open_url(template: str, hit: Hit, root: str | Path) -> str | None:
    """`template` rendered for `hit` of the source rooted at `root` (absolute); None when the
    hit's path is not a plain relative path inside that root."""
    root_text = posixpath.normpath(str(root))
    rel = hit.path
    if not rel or "\0" in rel or rel.startswith("/") or not posixpath.isabs(root_text):
        return None
    full = posixpath.normpath(posixpath.join(root_text, rel))
    if not _inside(full, root_text) or full == root_text:
        return None
    line = 1 if hit.page is not None or hit.start_line < 1 else hit.start_line
    return template.format(
        path=quote(full, safe="/"),
        relpath=quote(posixpath.relpath(full, root_text), safe="/"),
        line=line,
        source=quote(hit.source, safe=""),
    )


def open_urls(
    settings: Settings,
    hits: Sequence[Hit],
) -> list[str | None]:
    """Each hit's link (None where there is none); all None when `editor_uri` is unset.

    A hit's root is its source's, as the local state recorded it (hits of a source this
    data dir does not hold, e.g. from a shared server indexed elsewhere, get no link).
    """
    template = settings.editor_uri
    if not template or not hits:
        return [None] * len(hits)
    roots = source_roots(settings)
    out: list[str | None] = []
    for hit in hits:
        root = roots.get((hit.collection, hit.source)) or roots.get(("", hit.source))
        url = open_url(template, hit, root) if root else None
        if url is not None and root is not None:
            real_root = os.path.realpath(root)
            real = os.path.realpath(posixpath.join(real_root, hit.path))
            if not _inside(real, real_root):
                url = None
        out.append(url)
    return out


def linked(result: SearchResult, settings: Settings) -> SearchResult:
    """`result` with its hits' editor links made by `settings` (those of the caller: in
    process, or the owner's client; `links` None when `editor_uri` is unset)."""
    links = tuple(open_urls(settings, result.hits)) if settings.editor_uri else None
    return dataclasses.replace(result, links=links)


def source_roots(settings: Settings) -> Mapping[tuple[str, str], str]:
    """(collection, source) -> absolute root, plus ("", source) for any collection, from the
    local state; empty when it cannot be read (no link then, never an error)."""
    try:
        with State.open(settings.data_dir, readonly=True) as state:
            rows = state.sources()
    except (ChromasyncError, OSError) as exc:
        log.info("no editor links: the state of %s cannot be read: %s", settings.data_dir, exc)
        return {}
    roots: dict[tuple[str, str], str] = {}
    for row in rows:
        if not os.path.isabs(row.root):
            continue  # recorded relative by an older version: which folder is unknown
        roots[(row.collection, row.source)] = row.root
        roots.setdefault(("", row.source), row.root)
    return roots


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


__all__ = ["linked", "open_url", "open_urls", "source_roots"]
