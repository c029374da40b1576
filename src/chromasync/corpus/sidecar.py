"""Sidecars: a Markdown file whose front matter describes a document beside it.

Design notes: docs/internals.md, `corpus/sidecar.py`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

from ..records import AssetRef

#: The front matter key of a sidecar.
ASSET_KEY = "binary_asset"
MAX_FILENAME_CHARS = 1024
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def asset_ref(rel_path: str, data: Mapping[Any, Any]) -> AssetRef | None:
    """The file that the front matter `data` of the Markdown file `rel_path` describes;
    None when it has no `binary_asset` mapping."""
    asset = data.get(ASSET_KEY)
    if not isinstance(asset, Mapping):
        return None
    declared = asset.get("sha256")
    sha256 = declared.strip().lower() if isinstance(declared, str) else ""
    if sha256 and not _SHA256.match(sha256):
        sha256 = sha256[:80]  # kept (bounded) so that verify reports it as a mismatch
    name = asset.get("filename")
    if not isinstance(name, str) or not name.strip():
        return AssetRef("", sha256, "no-filename")
    shown = _shown(name)
    if len(name) > MAX_FILENAME_CHARS or "\x00" in name:
        return AssetRef("", sha256, f"outside-source {shown}")
    if name.startswith(("/", "\\", "~")) or _DRIVE.match(name):
        return AssetRef("", sha256, f"outside-source {shown}")
    target = posixpath.normpath(posixpath.join(posixpath.dirname(rel_path), name))
    if target in (".", "..") or target.startswith(("../", "/")):
        return AssetRef("", sha256, f"outside-source {shown}")
    return AssetRef(target, sha256)


def _shown(name: str) -> str:
    """A filename as a verify line shows it: one line, bounded."""
    one_line = name.replace("\n", " ").replace("\r", " ").replace("\x00", "\\0")
    return one_line if len(one_line) <= 200 else one_line[:200] + "..."
