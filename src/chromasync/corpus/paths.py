"""Paths that come from outside (REST bodies and queries, MCP arguments), checked.

Design notes: docs/internals.md, `corpus/paths.py`.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import unquote

from ..errors import AccessDenied, NotFound, SourceError

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_DRIVE = re.compile(r"^[A-Za-z]:($|[\\/])")
Kind = Literal["file", "dir", "any"]


def shown(raw: str, limit: int = 80) -> str:
    """The input as it may appear in a message: repr'd and shortened."""
    text = raw if len(raw) <= limit else raw[:limit] + "..."
    return repr(text)


def _decodings(raw: str) -> list[str]:
    forms = [raw]
    text = raw
    for _ in range(3):
        decoded = unquote(text)
        if decoded == text:
            break
        forms.append(decoded)
        text = decoded
    return forms + [unicodedata.normalize("NFKC", f) for f in forms]


def check_path_text(raw: str) -> str:
    """`raw` if its text is acceptable as a path, else `SourceError` saying why."""
    if not isinstance(raw, str) or not raw.strip():
        raise SourceError("the path is empty; give a path inside an allowed root")
    if any(ord(c) < 32 or ord(c) == 127 for c in raw):
        raise SourceError(f"the path {shown(raw)} contains a NUL or control character")
    if len(raw.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise SourceError(f"the path {shown(raw)} is longer than {MAX_PATH_BYTES} bytes")
    if "\\" in raw:
        raise SourceError(f"the path {shown(raw)} contains a backslash; use '/' as separator")
    if _SCHEME.match(raw):
        raise SourceError(f"the path {shown(raw)} is a URL; give a file system path")
    if _DRIVE.match(raw):
        raise SourceError(f"the path {shown(raw)} has a drive letter; give a POSIX path")
    if raw.startswith("~"):
        raise SourceError(f"the path {shown(raw)} starts with '~'; give the path in full")
    for form in _decodings(raw):
        parts = re.split(r"[/\\]", form)
        if ".." in parts:
            raise SourceError(
                f"the path {shown(raw)} contains '..' (perhaps encoded); "
                "give a path inside an allowed root"
            )
        if "\x00" in form:
            raise SourceError(f"the path {shown(raw)} contains an encoded NUL")
    for part in raw.split("/"):
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise SourceError(f"the path {shown(raw)} has a name over {MAX_NAME_BYTES} bytes")
    return raw


def relative_path(raw: str) -> str:
    """A checked, normalised relative POSIX path (`./a//b` -> `a/b`); refuses absolute ones."""
    check_path_text(raw)
    if raw.startswith("/"):
        raise SourceError(f"the path {shown(raw)} is absolute; give it relative to its source")
    parts = [p for p in PurePosixPath(raw).parts if p not in (".", "")]
    if not parts:
        raise SourceError(f"the path {shown(raw)} names the root itself, not a file")
    return "/".join(parts)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _check_kind(real: str, raw: str, kind: Kind) -> None:
    if not os.path.exists(real):
        raise NotFound(f"nothing at {shown(raw)}")
    if kind == "file" and not os.path.isfile(real):
        raise SourceError(f"{shown(raw)} is not a regular file")
    if kind == "dir" and not os.path.isdir(real):
        raise SourceError(f"{shown(raw)} is not a folder")


def resolve_in_root(raw: str, root: Path, kind: Kind = "file") -> Path:
    """`raw` (relative) under `root`, resolved with realpath; refused if it ends outside."""
    rel = relative_path(raw)
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, rel))
    if not _inside(real, real_root):
        raise AccessDenied(f"the path {shown(raw)} leads outside its root (through a link)")
    _check_kind(real, raw, kind)
    return Path(real)


def resolve_in_roots(raw: str, roots: Sequence[Path], kind: Kind = "any") -> Path:
    """`raw`, absolute or relative to one of `roots`, resolved; refused unless inside one."""
    check_path_text(raw)
    if not roots:
        raise AccessDenied(
            "no allowed roots are configured; start the service with --allow-root DIR"
        )
    real_roots = [os.path.realpath(r) for r in roots]
    if raw.startswith("/"):
        candidates = [os.path.normpath(raw)]
    else:
        candidates = [os.path.join(r, os.path.normpath(raw)) for r in real_roots]
    for candidate in candidates:
        if not any(_inside(os.path.normpath(candidate), r) for r in real_roots):
            continue
        real = os.path.realpath(candidate)
        if not any(_inside(real, r) for r in real_roots):
            raise AccessDenied(f"the path {shown(raw)} leads outside the allowed roots")
        if os.path.exists(real) or candidate is candidates[-1]:
            _check_kind(real, raw, kind)
            return Path(real)
    raise AccessDenied(f"the path {shown(raw)} is outside the allowed roots")


__all__ = ["check_path_text", "relative_path", "resolve_in_root", "resolve_in_roots", "shown"]
