"""Finding candidate content roots in a large tree (`chromasync discover`).

Design notes: docs/internals.md, `corpus/roots.py`.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MIN_MARKDOWN = 10
LEVELS = 3
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
BUILD_DIRS = frozenset(
    {
        "node_modules",
        "bower_components",
        "jspm_packages",
        "dist",
        "build",
        "_build",
        "out",
        "target",
        "public",
        "_site",
        "site-packages",
        "__pycache__",
        "coverage",
        "htmlcov",
        "venv",
        "virtualenv",
        "vendor",
    }
)
_MARKERS = ("pyvenv.cfg", "CACHEDIR.TAG")


@dataclass(frozen=True, slots=True)
class Candidate:
    path: Path  # absolute
    rel_path: str  # relative to the surveyed root, POSIX
    markdown_files: int  # within LEVELS levels


def is_build_dir(name: str) -> bool:
    return name.startswith(".") or name.lower() in BUILD_DIRS or name.endswith(".egg-info")


def find_content_roots(
    root: Path,
    skip_substrings: Sequence[str] = (),
) -> list[Candidate]:
    """Candidate content roots under `root`, sorted by path."""
    root = Path(root)
    direct: dict[str, int] = defaultdict(int)
    children: dict[str, list[str]] = defaultdict(list)
    for current, dirs, files in os.walk(root, followlinks=False):
        rel = Path(current).relative_to(root).as_posix()
        rel = "" if rel == "." else rel
        if rel and any(m in files for m in _MARKERS):
            dirs[:] = []
            continue
        kept = []
        for name in sorted(dirs):
            child = f"{rel}/{name}" if rel else name
            if is_build_dir(name) or any(s and s in child + "/" for s in skip_substrings):
                continue
            if os.path.islink(os.path.join(current, name)):
                continue
            kept.append(name)
            children[rel].append(child)
        dirs[:] = kept
        direct[rel] = sum(1 for f in files if f.lower().endswith(MARKDOWN_SUFFIXES))

    def within(rel: str, depth: int) -> int:
        count = direct.get(rel, 0)
        if depth > 1:
            count += sum(within(c, depth - 1) for c in children.get(rel, ()))
        return count

    def qualifies(rel: str) -> bool:
        return within(rel, LEVELS) >= MIN_MARKDOWN

    def subtree(rel: str) -> int:
        return direct.get(rel, 0) + sum(subtree(c) for c in children.get(rel, ()))

    def narrow(rel: str) -> list[str]:
        if direct.get(rel, 0):
            return [rel]
        with_md = [c for c in children.get(rel, ()) if subtree(c)]
        good = [c for c in with_md if qualifies(c)]
        if len(with_md) == 1 and good:
            return narrow(good[0])
        if len(good) >= 2:
            return [found for c in good for found in narrow(c)]
        return [rel]

    def select(rel: str) -> list[str]:
        if rel and qualifies(rel):
            return narrow(rel)
        return [found for c in children.get(rel, ()) for found in select(c)]

    return sorted(
        (Candidate(root / rel, rel, within(rel, LEVELS)) for rel in select("")),
        key=lambda c: c.rel_path,
    )
